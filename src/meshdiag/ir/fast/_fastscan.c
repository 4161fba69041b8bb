/* meshdiag.ir.fast._fastscan: the native `scan_known` of meshdiag/ir/lines.py.
 *
 * Same arguments and results as `lines.scan_known_py` (its reference), but the candidate
 * lines are found in one forward pass over the block instead of one `bytes.find` pass per
 * word.
 *
 * How a candidate is found: every needle is at least MIN_NEEDLE bytes long, so any
 * occurrence of a needle contains the 4-byte gram starting at one of its first STRIDE
 * offsets (STRIDE = MIN_NEEDLE - 4 + 1) and is hit when the block is sampled every STRIDE
 * bytes. Each sample is one hashed lookup in a small table (8 KiB, stays in L1) holding
 * those grams; a hit is checked exactly against the needles. The first hit found is in the
 * first candidate line, because the gram that reveals an occurrence lies inside it, hence
 * inside its line. Newlines are counted word-at-a-time only up to each candidate.
 *
 * C99, CPython API only; the GIL is held throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "_fastscan.h"

/* The words that make a line a candidate: `WORDS` in words.py, the one list, passed by
 * setup.py as the body of this initializer (the Python walker in lines.py reads the same
 * list; tests/test_fastscan.py compares the two walkers and `_fastscan.WORDS`). */
#ifndef MESHDIAG_NEEDLES
#error "MESHDIAG_NEEDLES is not defined: build with setup.py (it passes meshdiag/ir/words.py)"
#endif
static const char *const NEEDLES[] = {MESHDIAG_NEEDLES};
#define N_NEEDLES ((int)(sizeof(NEEDLES) / sizeof(NEEDLES[0])))

#define GRAM 4
#define MAX_STRIDE 8
#define HASH_BITS 13

typedef struct {
    uint32_t gram;   /* the 4 bytes at `off` in the needle */
    int off;         /* offset of the gram in the needle */
    int needle;      /* index into NEEDLES */
} Entry;

static unsigned char table[1u << HASH_BITS]; /* 1 where a needle gram hashes */
static Entry entries[N_NEEDLES * MAX_STRIDE];
static int n_entries;
static size_t needle_len[N_NEEDLES];
static Py_ssize_t stride;

static inline uint32_t load4(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v); /* same byte order for needles and block: endian-neutral */
    return v;
}

static inline uint32_t hash4(uint32_t g) {
    return (uint32_t)(g * 2654435761u) >> (32 - HASH_BITS);
}

static int build_tables(void) {
    size_t min_len = (size_t)-1;
    for (int k = 0; k < N_NEEDLES; k++) {
        needle_len[k] = strlen(NEEDLES[k]);
        if (needle_len[k] < min_len)
            min_len = needle_len[k];
    }
    if (min_len < GRAM || min_len - GRAM + 1 > MAX_STRIDE) {
        PyErr_SetString(PyExc_RuntimeError,
                        "_fastscan: needle lengths out of the supported range");
        return -1;
    }
    stride = (Py_ssize_t)(min_len - GRAM + 1);
    n_entries = 0;
    memset(table, 0, sizeof table);
    for (int k = 0; k < N_NEEDLES; k++) {
        for (int o = 0; o < (int)stride; o++) {
            uint32_t g = load4((const unsigned char *)NEEDLES[k] + o);
            table[hash4(g)] = 1;
            entries[n_entries].gram = g;
            entries[n_entries].off = o;
            entries[n_entries].needle = k;
            n_entries++;
        }
    }
    return 0;
}

/* The needle occurrence containing gram `g`, sampled at `j`, starting at or after `from`;
 * -1 when the gram is a false positive of the hash or of the gram itself. */
static Py_ssize_t check_hit(const unsigned char *buf, Py_ssize_t n, Py_ssize_t from,
                            Py_ssize_t j, uint32_t g) {
    for (int e = 0; e < n_entries; e++) {
        if (entries[e].gram != g)
            continue;
        Py_ssize_t i = j - entries[e].off;
        size_t len = needle_len[entries[e].needle];
        if (i >= from && (size_t)(n - i) >= len &&
            memcmp(buf + i, NEEDLES[entries[e].needle], len) == 0)
            return i; /* needles hold no newline: any match here is in the same line */
    }
    return -1;
}

/* Offset of a needle occurrence starting at or after `from` (a line start) in the first
 * line that holds one, or -1: sampled every `stride` bytes (see the top) */
static Py_ssize_t find_needle_sampled(const unsigned char *buf, Py_ssize_t n, Py_ssize_t from) {
    const Py_ssize_t s = stride;
    Py_ssize_t j = from;
    /* four samples per step, one branch for all four (hits are rare) */
    for (; j + 3 * s + GRAM <= n; j += 4 * s) {
        uint32_t g0 = load4(buf + j), g1 = load4(buf + j + s);
        uint32_t g2 = load4(buf + j + 2 * s), g3 = load4(buf + j + 3 * s);
        if ((table[hash4(g0)] | table[hash4(g1)] | table[hash4(g2)] | table[hash4(g3)]) == 0)
            continue;
        const uint32_t g[4] = {g0, g1, g2, g3};
        for (int k = 0; k < 4; k++) {
            Py_ssize_t i;
            if (table[hash4(g[k])] && (i = check_hit(buf, n, from, j + k * s, g[k])) >= 0)
                return i;
        }
    }
    for (; j + GRAM <= n; j += s) {
        uint32_t g0 = load4(buf + j);
        Py_ssize_t i;
        if (table[hash4(g0)] && (i = check_hit(buf, n, from, j, g0)) >= 0)
            return i;
    }
    return -1;
}

/* -- the candidates 32 bytes at a time (Teddy, as Hyperscan finds a few literals) -------
 * Each needle is in one of 8 buckets (a bit). For each of a needle's first TEDDY_BYTES
 * bytes, two 16-entry tables say which buckets have that byte's low and high nibble
 * there; `pshufb` looks 32 bytes up in each at once, and a position where some bucket
 * holds all three bytes (nibble by nibble: a superset) is checked against that bucket's
 * needles. About 0.7 instructions a byte where the sampled search took 3: the bytes of
 * the lines that are not candidates (most of an MLIR dump's op lines) were a tenth of a
 * big file's scan. With AVX2 (checked when the module loads; MESHDIAG_NO_SIMD=1 turns it
 * off, for the tests of the other way); the last bytes of a block are sampled. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define FS_TEDDY 1
#include <immintrin.h>

#define TEDDY_BYTES 3
/* (every needle has its first TEDDY_BYTES, and is one bit of a bucket's mask) */
_Static_assert(GRAM >= TEDDY_BYTES, "a needle shorter than the bytes Teddy looks up");
_Static_assert(N_NEEDLES <= 32, "more needles than a bucket's mask holds");
static unsigned char teddy_lo[TEDDY_BYTES][16], teddy_hi[TEDDY_BYTES][16];
static unsigned int teddy_bucket[8]; /* the needles (bits) of each bucket */
static int teddy_on;

static void build_teddy(void) {
    memset(teddy_lo, 0, sizeof teddy_lo);
    memset(teddy_hi, 0, sizeof teddy_hi);
    memset(teddy_bucket, 0, sizeof teddy_bucket);
    for (int k = 0; k < N_NEEDLES; k++) {
        int b = k % 8;
        teddy_bucket[b] |= 1u << k;
        for (int j = 0; j < TEDDY_BYTES; j++) {
            unsigned char c = (unsigned char)NEEDLES[k][j];
            teddy_lo[j][c & 15] |= (unsigned char)(1u << b);
            teddy_hi[j][c >> 4] |= (unsigned char)(1u << b);
        }
    }
    const char *off = getenv("MESHDIAG_NO_SIMD");
    __builtin_cpu_init();
    teddy_on = __builtin_cpu_supports("avx2") && !(off != NULL && off[0] == '1');
}

/* Whether a needle of the buckets `bits` starts at buf[at] */
static int teddy_verify(const unsigned char *buf, Py_ssize_t n, Py_ssize_t at, unsigned bits) {
    for (int b = 0; bits; b++, bits >>= 1) {
        if (!(bits & 1))
            continue;
        for (unsigned ks = teddy_bucket[b]; ks; ks &= ks - 1) {
            int k = __builtin_ctz(ks);
            size_t len = needle_len[k];
            if ((size_t)(n - at) >= len && memcmp(buf + at, NEEDLES[k], len) == 0)
                return 1;
        }
    }
    return 0;
}

__attribute__((target("avx2"))) static Py_ssize_t
find_needle_teddy(const unsigned char *buf, Py_ssize_t n, Py_ssize_t from) {
    const __m256i nib = _mm256_set1_epi8(0x0f);
    __m256i lo[TEDDY_BYTES], hi[TEDDY_BYTES];
    for (int j = 0; j < TEDDY_BYTES; j++) {
        lo[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)teddy_lo[j]));
        hi[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)teddy_hi[j]));
    }
    Py_ssize_t i = from;
    for (; i + 32 + TEDDY_BYTES - 1 <= n; i += 32) {
        __m256i m = _mm256_set1_epi8(-1);
        for (int j = 0; j < TEDDY_BYTES; j++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(buf + i + j));
            __m256i l = _mm256_shuffle_epi8(lo[j], _mm256_and_si256(x, nib));
            __m256i h = _mm256_shuffle_epi8(hi[j], _mm256_and_si256(_mm256_srli_epi16(x, 4), nib));
            m = _mm256_and_si256(m, _mm256_and_si256(l, h));
        }
        unsigned cand = ~(unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, _mm256_setzero_si256()));
        if (!cand)
            continue;
        unsigned char bits[32];
        _mm256_storeu_si256((__m256i *)bits, m);
        for (; cand; cand &= cand - 1) { /* in order: the first found is the first there */
            int l = __builtin_ctz(cand);
            if (teddy_verify(buf, n, i + l, bits[l]))
                return i + l;
        }
    }
    return find_needle_sampled(buf, n, i);
}
#endif

static Py_ssize_t find_needle(const unsigned char *buf, Py_ssize_t n, Py_ssize_t from) {
#ifdef FS_TEDDY
    if (teddy_on)
        return find_needle_teddy(buf, n, from);
#endif
    return find_needle_sampled(buf, n, from);
}

/* Number of '\n' bytes in p[0:len], 8 bytes at a time. */
#ifdef __SSE2__
/* 16 bytes a step (every x86-64 has SSE2): each '\n' lane of a compare is -1, subtracted
 * into per-lane counters that are summed (psadbw) before they can wrap; three times the
 * 8-byte SWAR count below, which a part's line count in the parent waited on */
static Py_ssize_t count_newlines(const unsigned char *p, Py_ssize_t len) {
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    Py_ssize_t count = 0, i = 0;
    while (len - i >= 16) {
        Py_ssize_t steps = (len - i) / 16;
        if (steps > 255)
            steps = 255;
        __m128i acc = zero;
        for (Py_ssize_t s = 0; s < steps; s++, i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(x, nl));
        }
        __m128i sums = _mm_sad_epu8(acc, zero); /* two 64-bit sums */
        count += (Py_ssize_t)(_mm_cvtsi128_si64(sums) +
                              _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
    }
    for (; i < len; i++)
        count += p[i] == '\n';
    return count;
}
#else
static Py_ssize_t count_newlines(const unsigned char *p, Py_ssize_t len) {
    const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
    const uint64_t nl = ones * (uint64_t)'\n';
    const uint64_t m16 = 0x00ff00ff00ff00ffull;
    Py_ssize_t count = 0, i = 0;
    while (len - i >= 8) {
        /* per-byte counters: at most 255 words before they are folded */
        Py_ssize_t words = (len - i) / 8;
        if (words > 255)
            words = 255;
        uint64_t acc = 0;
        for (Py_ssize_t w = 0; w < words; w++, i += 8) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            x ^= nl; /* '\n' bytes become 0 */
            /* high bit set exactly in the zero bytes (no carries between bytes) */
            uint64_t z = ~(((x & low7) + low7) | x | low7);
            acc += z >> 7;
        }
        acc = (acc & m16) + ((acc >> 8) & m16);
        count += (Py_ssize_t)((acc * 0x0001000100010001ull) >> 48);
    }
    for (; i < len; i++)
        count += p[i] == '\n';
    return count;
}
#endif

static int as_index(PyObject *o, const char *fn, const char *name, Py_ssize_t *out) {
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be int, not %.100s", fn, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(o);
    if (v == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: %s out of range", fn, name);
        return -1;
    }
    *out = v;
    return 0;
}

PyDoc_STRVAR(scan_known_doc,
"scan_known(buf, pos, lineno, known, lines_out, items_out[, prints[, end]])\n"
"    -> (start, end, lineno, next)\n"
"\n"
"Native lines.scan_known_py: walk the candidate lines of `buf` (bytes, whole lines) from\n"
"the line starting at `pos` (number `lineno`). A candidate whose bytes (without the\n"
"newline and one trailing \\r) map to a value other than None in the dict `known` has its\n"
"number appended to the list `lines_out` and the value to the list `items_out`; the first\n"
"other candidate stops the walk with (start, end, its number, offset after its newline).\n"
"At the end of `buf`: (-1, -1, number of the line after the block, len(buf)).\n"
"`prints` (None, or the bytearray filter of `known`'s lines: see line_print): a line whose\n"
"bit is clear is not looked up (it was never learned). `end` (None, or an offset after a\n"
"newline): the lines walked are those of buf[:end], and `end` stands for len(buf) above.");

PyDoc_STRVAR(scan_plain_doc,
"scan_plain(buf, pos, lineno, known, lines_out, items_out, protos, budget[, prints[, end]])\n"
"    -> (start, end, lineno, next, read)\n"
"\n"
"Native lines.scan_plain_py: scan_known, but up to `budget` candidates that are not known\n"
"and are plain constraint or op lines whose sharding has a prototype in the dict `protos` are\n"
"appended as values made from it (_values.c) instead of stopping the walk; `read` is how\n"
"many.");

/* A line's print: a bit of the `prints` filter the line memo keeps beside each dict of
 * known lines (`ScanCache.lines`), from its length and its first and last 8 bytes. A
 * line whose bit is clear was never learned, so the walker need not look it up: in a file
 * of new lines every look-up missed, and hashing each whole line for it was 4% of the
 * run. Lines that share the bit are looked up as before. */
#define PRINT_BITS (1u << 18)

static inline uint32_t line_print_of(const unsigned char *p, Py_ssize_t n) {
    uint64_t a = 0, b = 0;
    size_t k = n < 8 ? (size_t)n : 8;
    memcpy(&a, p, k);
    memcpy(&b, p + n - (Py_ssize_t)k, k);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    a = __builtin_bswap64(a); /* (the bytes read little-endian, as the twin reads them) */
    b = __builtin_bswap64(b);
#endif
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull ^ a * 0xC2B2AE3D27D4EB4Full ^
                 (b + 0x165667B19E3779F9ull) * 0x85EBCA77C2B2AE63ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (uint32_t)(h & (PRINT_BITS - 1));
}

PyDoc_STRVAR(line_print_doc,
"line_print(line) -> int\n"
"\n"
"The bit of a `prints` filter (a bytearray of 2**18 bits, bit i in byte i >> 3 at 1 << (i & 7))\n"
"the line `line` (bytes, without its newline) sets when it is learned: the walkers skip the\n"
"look-up of a line whose bit is clear (see ScanCache.lines).");

static PyObject *line_print(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line_print: expected bytes");
        return NULL;
    }
    return PyLong_FromUnsignedLong(
        line_print_of((const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

/* The `prints` filter argument of a walk: its bits, NULL for None (look every line up);
 * -1 with an error set for anything else */
static int prints_arg(PyObject *o, const char *fn, const unsigned char **bits) {
    *bits = NULL;
    if (o == Py_None)
        return 0;
    if (!PyByteArray_Check(o) || PyByteArray_GET_SIZE(o) != PRINT_BITS / 8) {
        PyErr_Format(PyExc_TypeError, "%s: prints must be None or a bytearray of %u bytes", fn,
                     PRINT_BITS / 8);
        return -1;
    }
    *bits = (const unsigned char *)PyByteArray_AS_STRING(o);
    return 0;
}

/* What scan_plain reads besides the known lines: plain constraint and op lines with a prototype,
 * at most `budget` of them */
typedef struct {
    PyObject *protos;
    Py_ssize_t budget, read;
    FsProtoCache cache; /* the prototypes the call found last */
} Plain;

static PyObject *walk(PyObject *const *args, const char *fn, Plain *plain,
                      const unsigned char *prints, PyObject *end_arg) {
    PyObject *bufobj = args[0], *known = args[3], *lines_out = args[4], *items_out = args[5];
    if (!PyBytes_Check(bufobj)) {
        PyErr_Format(PyExc_TypeError, "%s: buf must be bytes, not %.100s", fn,
                     Py_TYPE(bufobj)->tp_name);
        return NULL;
    }
    if (!PyDict_Check(known)) {
        PyErr_Format(PyExc_TypeError, "%s: known must be dict, not %.100s", fn,
                     Py_TYPE(known)->tp_name);
        return NULL;
    }
    if (!PyList_Check(lines_out) || !PyList_Check(items_out)) {
        PyErr_Format(PyExc_TypeError, "%s: lines_out and items_out must be lists", fn);
        return NULL;
    }
    Py_ssize_t pos, lineno;
    if (as_index(args[1], fn, "pos", &pos) < 0 || as_index(args[2], fn, "lineno", &lineno) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(bufobj);
    Py_ssize_t n = PyBytes_GET_SIZE(bufobj);
    if (end_arg != Py_None) { /* the lines of buf[:end] only */
        Py_ssize_t end;
        if (as_index(end_arg, fn, "end", &end) < 0)
            return NULL;
        if (end < 0 || end > n) {
            PyErr_Format(PyExc_ValueError, "%s: end %zd outside the block (length %zd)", fn,
                         end, n);
            return NULL;
        }
        n = end;
    }
    if (pos < 0 || pos > n) {
        PyErr_Format(PyExc_ValueError, "%s: pos %zd outside the block (length %zd)", fn, pos,
                     n);
        return NULL;
    }
    /* line numbers grow by at most n - pos: refuse values that could overflow */
    if (lineno > PY_SSIZE_T_MAX - (n - pos) - 1) {
        PyErr_Format(PyExc_ValueError, "%s: lineno out of range", fn);
        return NULL;
    }
#define WALK_RESULT(start, end, number, next)                                                \
    (plain ? Py_BuildValue("(nnnnn)", (Py_ssize_t)(start), (Py_ssize_t)(end), number, next,  \
                           plain->read)                                                      \
           : Py_BuildValue("(nnnn)", (Py_ssize_t)(start), (Py_ssize_t)(end), number, next))

    Py_ssize_t p = pos;
    if (p > 0 && buf[p - 1] != '\n') {
        /* not a line start: like the reference, only lines starting after pos count */
        const unsigned char *nl = memchr(buf + p, '\n', (size_t)(n - p));
        if (nl == NULL)
            return WALK_RESULT(-1, -1, lineno, n);
        p = (Py_ssize_t)(nl - buf) + 1;
        lineno += 1;
    }
    Py_ssize_t counted = p; /* newlines before `counted` are in lineno */
    while (p <= n) {
        Py_ssize_t i = find_needle(buf, n, p);
        if (i < 0)
            break;
        Py_ssize_t ls = i;
        while (ls > p && buf[ls - 1] != '\n')
            ls--;
        const unsigned char *nl = memchr(buf + i, '\n', (size_t)(n - i));
        Py_ssize_t le = nl ? (Py_ssize_t)(nl - buf) : n;
        lineno += count_newlines(buf + counted, ls - counted);
        counted = ls;
        Py_ssize_t end = (le > ls && buf[le - 1] == '\r') ? le - 1 : le;

        PyObject *item = NULL;
        int look = PyDict_GET_SIZE(known) > 0; /* (a print only where there is a dict) */
        if (look && prints != NULL) {
            uint32_t bit = line_print_of(buf + ls, end - ls);
            look = (prints[bit >> 3] >> (bit & 7)) & 1;
        }
        if (look) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)buf + ls, end - ls);
            if (key == NULL)
                return NULL;
            item = PyDict_GetItemWithError(known, key); /* borrowed */
            Py_DECREF(key);
            if (item == NULL && PyErr_Occurred())
                return NULL;
        }
        if (item == NULL) { /* not known: a plain line with a prototype, or the caller's */
            if (plain != NULL && plain->budget > 0 && PyDict_GET_SIZE(plain->protos) > 0) {
                int got = fs_plain_line((const char *)buf + ls, end - ls, lineno,
                                        plain->protos, lines_out, items_out, &plain->cache);
                if (got < 0)
                    return NULL;
                if (got > 0) {
                    plain->budget--;
                    plain->read++;
                    p = le + 1;
                    continue;
                }
            }
            return WALK_RESULT(ls, end, lineno, le + 1);
        }
        if (item == Py_None) { /* known to yield nothing: skipped */
            p = le + 1;
            continue;
        }
        Py_INCREF(item); /* keep it alive whatever the appends do */
        PyObject *num = PyLong_FromSsize_t(lineno);
        int failed = num == NULL || PyList_Append(lines_out, num) < 0 ||
                     PyList_Append(items_out, item) < 0;
        Py_XDECREF(num);
        Py_DECREF(item);
        if (failed)
            return NULL;
        p = le + 1;
    }
    if (counted < n)
        lineno += count_newlines(buf + counted, n - counted);
    return WALK_RESULT(-1, -1, lineno, n);
#undef WALK_RESULT
}

static PyObject *scan_known(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs < 6 || nargs > 8) {
        PyErr_Format(PyExc_TypeError, "scan_known expected 6 to 8 arguments, got %zd", nargs);
        return NULL;
    }
    const unsigned char *prints;
    if (prints_arg(nargs >= 7 ? args[6] : Py_None, "scan_known", &prints) < 0)
        return NULL;
    return walk(args, "scan_known", NULL, prints, nargs == 8 ? args[7] : Py_None);
}

static PyObject *scan_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs < 8 || nargs > 10) {
        PyErr_Format(PyExc_TypeError, "scan_plain expected 8 to 10 arguments, got %zd", nargs);
        return NULL;
    }
    const unsigned char *prints;
    if (prints_arg(nargs >= 9 ? args[8] : Py_None, "scan_plain", &prints) < 0)
        return NULL;
    Plain plain = {args[6], 0, 0, {{0}}};
    if (!PyDict_Check(plain.protos)) {
        PyErr_Format(PyExc_TypeError, "scan_plain: protos must be dict, not %.100s",
                     Py_TYPE(plain.protos)->tp_name);
        return NULL;
    }
    if (as_index(args[7], "scan_plain", "budget", &plain.budget) < 0)
        return NULL;
    PyObject *result = walk(args, "scan_plain", &plain, prints, nargs == 10 ? args[9] : Py_None);
    fs_proto_cache_clear(&plain.cache);
    return result;
}

/* ---- match_end: the bracket closing s[pos] --------------------------------------------
 * The same answer as `text.match_end_py` (its reference): the index after the bracket that
 * closes s[pos] (one of < [ { ( ), skipping double-quoted strings (a backslash escapes the
 * next character) and the `->` arrow; -1 when the text ends first or a closer does not
 * match. Annotated MLIR lines are dense with brackets: one Python step per bracket was most
 * of the cost of reading a line for the first time. */

/* Index after the bracket closing data[pos] (see match_end below); -1 when the text ends
 * first, -2 with a MemoryError set when the bracket stack cannot grow. Shared with the
 * field readers (_fields.c) through _fastscan.h. */
/* The body, for a constant `kind` each (fs_match_end): the compiler then reads each
 * character directly instead of switching on the kind at every one (annotated lines are
 * ASCII: most calls are 1-byte) */
/* 1 for the bytes the bracket scans stop at (quote, brackets; `,` is 2: split_top stops at
 * it too): a 1-byte string skips the others in a tight loop (a function signature is
 * mostly names and types between its brackets) */
static const unsigned char STOP[256] = {
    ['"'] = 1, ['<'] = 1, ['['] = 1, ['{'] = 1, ['('] = 1,
    ['>'] = 1, [']'] = 1, ['}'] = 1, [')'] = 1, [','] = 2,
};

/* The top-level commas of a bracket group (split_group): their offsets, in a buffer of the
 * caller's grown on the heap when full */
typedef struct {
    Py_ssize_t *at, n, cap, *small;
} Commas;

/* Record a comma at `p`: 0, or -1 with a MemoryError set */
static int commas_push(Commas *c, Py_ssize_t p) {
    if (c->n == c->cap) {
        Py_ssize_t *bigger = PyMem_Malloc((size_t)c->cap * 2 * sizeof(Py_ssize_t));
        if (bigger == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(bigger, c->at, (size_t)c->n * sizeof(Py_ssize_t));
        if (c->at != c->small)
            PyMem_Free(c->at);
        c->at = bigger;
        c->cap *= 2;
    }
    c->at[c->n++] = p;
    return 0;
}

/* The spans of a bracket group opening at `pos` and closing before `stop` (its closing
 * bracket) whose top-level commas are `c`, as split_top makes them: between the commas,
 * and after the last one when it is not empty or there were commas. How many, and the
 * k-th (a, e). */
static inline Py_ssize_t group_spans(const Commas *c, Py_ssize_t pos, Py_ssize_t stop) {
    return c->n + (pos + 1 < stop || c->n > 0 ? 1 : 0);
}

static inline void group_span(const Commas *c, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t k,
                              Py_ssize_t *a, Py_ssize_t *e) {
    *a = k == 0 ? pos + 1 : c->at[k - 1] + 1;
    *e = k < c->n ? c->at[k] : stop;
}

/* With `commas` (a constant NULL at match_end's calls: the compiler drops what it does),
 * the commas at the group's own depth are recorded too */
static inline __attribute__((always_inline)) Py_ssize_t
match_end_of(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos, Commas *commas) {
    if (pos < 0)
        pos = 0;
    char small[256];
    char *stack = small;
    Py_ssize_t cap = (Py_ssize_t)sizeof(small), depth = 0, result = -1;
    for (Py_ssize_t p = pos; p < n; p++) {
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *b = data;
            if (commas != NULL) /* stops at commas too */
                while (p < n && !STOP[b[p]])
                    p++;
            else
                while (p < n && STOP[b[p]] != 1)
                    p++;
            if (p == n)
                break;
        }
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        char want = 0;
        switch (c) {
        case '"': {
            Py_ssize_t q = p + 1;
            while (q < n) {
                Py_UCS4 d = PyUnicode_READ(kind, data, q);
                if (d == '"')
                    break;
                q += d == '\\' ? 2 : 1;
            }
            p = q; /* the loop's p++ steps past the closing quote */
            continue;
        }
        case ',':
            if (commas != NULL && depth == 1 && commas_push(commas, p) < 0) {
                result = -2;
                goto done;
            }
            continue;
        case '<': want = '>'; break;
        case '[': want = ']'; break;
        case '{': want = '}'; break;
        case '(': want = ')'; break;
        case '>':
            if (p > 0 && PyUnicode_READ(kind, data, p - 1) == '-')
                continue; /* `->` */
            /* fall through */
        case ']':
        case '}':
        case ')':
            if (depth == 0 || stack[depth - 1] != (char)c)
                goto done;
            if (--depth == 0) {
                result = p + 1;
                goto done;
            }
            continue;
        default:
            continue;
        }
        if (depth == cap) { /* deeper than the small stack: grow on the heap */
            Py_ssize_t ncap = cap * 2;
            char *bigger = PyMem_Malloc((size_t)ncap);
            if (bigger == NULL) {
                if (stack != small)
                    PyMem_Free(stack);
                PyErr_NoMemory();
                return -2;
            }
            memcpy(bigger, stack, (size_t)depth);
            if (stack != small)
                PyMem_Free(stack);
            stack = bigger;
            cap = ncap;
        }
        stack[depth++] = want;
    }
done:
    if (stack != small)
        PyMem_Free(stack);
    return result;
}

Py_ssize_t fs_match_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos) {
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return match_end_of(PyUnicode_1BYTE_KIND, data, n, pos, NULL);
    case PyUnicode_2BYTE_KIND:
        return match_end_of(PyUnicode_2BYTE_KIND, data, n, pos, NULL);
    default:
        return match_end_of(PyUnicode_4BYTE_KIND, data, n, pos, NULL);
    }
}

static PyObject *match_end(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "match_end(s, pos) takes 2 arguments");
        return NULL;
    }
    PyObject *s = args[0];
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "match_end: s must be a str");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t end = fs_match_end(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), pos);
    return end == -2 ? NULL : PyLong_FromSsize_t(end);
}

PyDoc_STRVAR(match_end_doc,
             "match_end(s, pos) -> int\n\n"
             "Index after the bracket closing s[pos], skipping quoted strings and '->';\n"
             "-1 when the text ends first (see meshdiag.ir.text.match_end_py).");

/* ---- split_top and the top-level colon of an op line --------------------------------
 * `text.split_top_py` and the scan in `text.op_result_types_py`, in C: the same bracket
 * and quote rules as match_end (without matching pairs: only the depth counts). */

static int read_str_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
                         PyObject **s, Py_ssize_t *a, Py_ssize_t *b) {
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, "wrong number of arguments");
        return -1;
    }
    *s = args[0];
    if (!PyUnicode_Check(*s)) {
        PyErr_SetString(PyExc_TypeError, "expected a str");
        return -1;
    }
    *a = PyLong_AsSsize_t(args[1]);
    if (*a == -1 && PyErr_Occurred())
        return -1;
    if (want == 3) {
        *b = PyLong_AsSsize_t(args[2]);
        if (*b == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* index of the quote closing a string whose content starts at q (a backslash escapes the
 * next character); `end` or more when it is not closed before `end` */
static inline __attribute__((always_inline)) Py_ssize_t closing_quote(int kind, const void *data, Py_ssize_t q, Py_ssize_t end) {
    while (q < end) {
        Py_UCS4 d = PyUnicode_READ(kind, data, q);
        if (d == '"')
            break;
        q += d == '\\' ? 2 : 1;
    }
    return q;
}

/* Where the next comma at bracket depth 0 is in data[p:end] (depth carried between calls),
 * or `end`: split_top's loop, for a constant `kind` each (see match_end_of) */
static inline __attribute__((always_inline)) Py_ssize_t
top_comma_of(int kind, const void *data, Py_ssize_t p, Py_ssize_t end, Py_ssize_t *depth) {
    Py_ssize_t d = *depth;
    while (p < end) {
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *b = data;
            while (p < end && !STOP[b[p]])
                p++;
            if (p == end)
                break;
        }
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if (c == '"') {
            p = closing_quote(kind, data, p + 1, end) + 1;
            continue;
        }
        if (c == '<' || c == '[' || c == '{' || c == '(') {
            d++;
        } else if (c == '>' || c == ']' || c == '}' || c == ')') {
            if (!(c == '>' && p > 0 && PyUnicode_READ(kind, data, p - 1) == '-'))
                d--;
        } else if (c == ',' && d == 0) {
            break;
        }
        p++;
    }
    *depth = d;
    return p < end ? p : end;
}

static Py_ssize_t top_comma(int kind, const void *data, Py_ssize_t p, Py_ssize_t end,
                            Py_ssize_t *depth) {
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return top_comma_of(PyUnicode_1BYTE_KIND, data, p, end, depth);
    case PyUnicode_2BYTE_KIND:
        return top_comma_of(PyUnicode_2BYTE_KIND, data, p, end, depth);
    default:
        return top_comma_of(PyUnicode_4BYTE_KIND, data, p, end, depth);
    }
}

/* Append (a, b) to `spans`: 0, or -1 with an error set */
static int append_span(PyObject *spans, Py_ssize_t a, Py_ssize_t b) {
    PyObject *x = PyLong_FromSsize_t(a), *y = PyLong_FromSsize_t(b);
    PyObject *span = x != NULL && y != NULL ? PyTuple_Pack(2, x, y) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(y);
    if (span != NULL) /* two ints: never in a cycle (a signature's 400 spans were each
                       * linked in and out of the collector's lists) */
        PyObject_GC_UnTrack(span);
    int failed = span == NULL || PyList_Append(spans, span) < 0;
    Py_XDECREF(span);
    return failed ? -1 : 0;
}

static PyObject *split_top(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    PyObject *s;
    Py_ssize_t start, end;
    if (read_str_args(args, nargs, 3, &s, &start, &end) < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (start < 0 || end > n) {
        PyErr_SetString(PyExc_ValueError, "split_top: span outside the text");
        return NULL;
    }
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    PyObject *spans = PyList_New(0);
    if (spans == NULL)
        return NULL;
    Py_ssize_t depth = 0, item = start;
    for (;;) {
        Py_ssize_t comma = top_comma(kind, data, item, end, &depth);
        if (comma >= end)
            break;
        if (append_span(spans, item, comma) < 0) {
            Py_DECREF(spans);
            return NULL;
        }
        item = comma + 1;
    }
    if ((item < end || PyList_GET_SIZE(spans) > 0) && append_span(spans, item, end) < 0) {
        Py_DECREF(spans);
        return NULL;
    }
    return spans;
}

/* ---- split_group: match_end and split_top of a bracket group in one pass ---------------
 * A function signature is one line of tens of kilobytes (a program of 400 parameters):
 * finding its closing parenthesis and then splitting what is between at top-level commas
 * read it twice. */

/* The group's spans (`group_spans`) as a list of (a, e); NULL with an error set */
static PyObject *group_span_list(const Commas *c, Py_ssize_t pos, Py_ssize_t stop) {
    PyObject *spans = PyList_New(0);
    Py_ssize_t count = group_spans(c, pos, stop);
    for (Py_ssize_t k = 0; spans != NULL && k < count; k++) {
        Py_ssize_t a, e;
        group_span(c, pos, stop, k, &a, &e);
        if (append_span(spans, a, e) < 0)
            Py_CLEAR(spans);
    }
    return spans;
}

static PyObject *split_group(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    PyObject *s;
    Py_ssize_t pos, unused;
    if (read_str_args(args, nargs, 2, &s, &pos, &unused) < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_UCS4 open = pos >= 0 && pos < n ? PyUnicode_READ(kind, data, pos) : 0;
    if (open != '<' && open != '[' && open != '{' && open != '(')
        return Py_BuildValue("(nN)", (Py_ssize_t)-1, PyList_New(0)); /* no group opens there */
    Py_ssize_t small[64];
    Commas commas = {small, 0, 64, small};
    Py_ssize_t end;
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        end = match_end_of(PyUnicode_1BYTE_KIND, data, n, pos, &commas);
        break;
    case PyUnicode_2BYTE_KIND:
        end = match_end_of(PyUnicode_2BYTE_KIND, data, n, pos, &commas);
        break;
    default:
        end = match_end_of(PyUnicode_4BYTE_KIND, data, n, pos, &commas);
    }
    PyObject *spans = NULL; /* (end -2: a MemoryError) */
    if (end >= 0)
        spans = group_span_list(&commas, pos, end - 1);
    else if (end == -1)
        spans = PyList_New(0);
    if (commas.at != small)
        PyMem_Free(commas.at);
    if (spans == NULL)
        return NULL;
    return Py_BuildValue("(nN)", end < 0 ? (Py_ssize_t)-1 : end, spans);
}

PyDoc_STRVAR(split_group_doc,
             "split_group(s, pos) -> (end, spans)\n\n"
             "The bracket group opening at s[pos]: match_end(s, pos) and, when it closes,\n"
             "split_top(s, pos + 1, end - 1), read in one pass; (-1, []) when it does not\n"
             "close or s[pos] opens none (see meshdiag.ir.text.split_group_py).");

/* ---- a signature's group and its plain entries in one pass ---------------------------
 * `fields.entry_group_py`: split_group of the signature's parameters, then entry_values of
 * its spans from the first. A signature of 400 parameters made 400 span tuples and 800
 * ints only for entry_values to read them back; here the spans stay in C, and a list of
 * them is made only when some entry is left for the general reader. */
PyDoc_STRVAR(entry_group_doc,
             "entry_group(line, pos, lineno, protos, lines_out, items_out)\n"
             "    -> (end, k, spans or None)\n\n"
             "split_group(line, pos) and entry_values(line, spans, 0, ...) in one call: `k` is\n"
             "the first entry not made (len(spans) when all were, and then spans is None);\n"
             "(-1, 0, []) when the group does not close. NotImplemented for a line that is not\n"
             "ASCII. See meshdiag.ir.fields.entry_group_py.");

static PyObject *entry_group(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "entry_group(line, pos, lineno, protos, lines_out, items_out)");
        return NULL;
    }
    PyObject *line = args[0], *lineno = args[2], *protos = args[3];
    PyObject *lines_out = args[4], *items_out = args[5];
    if (!PyUnicode_Check(line) || !PyLong_Check(lineno) || !PyDict_Check(protos) ||
        !PyList_Check(lines_out) || !PyList_Check(items_out)) {
        PyErr_SetString(PyExc_TypeError,
                        "entry_group: expected (str, int, int, dict, list, list)");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(line))
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    const char *s = (const char *)PyUnicode_DATA(line);
    char open = pos >= 0 && pos < n ? s[pos] : 0;
    if (open != '<' && open != '[' && open != '{' && open != '(')
        return Py_BuildValue("(nnN)", (Py_ssize_t)-1, (Py_ssize_t)0, PyList_New(0));
    Py_ssize_t small[64];
    Commas commas = {small, 0, 64, small};
    FsProtoCache cache = {0};
    PyObject *result = NULL;
    /* the plain entries of a `(` group read one after the other, each up to its `,` or the
     * group's `)` (fs_read_entry), without the bracket walk over the whole group that
     * splits it: that walk was a sixth of reading a big file's signatures. At the first
     * entry read otherwise, the group is walked and split as before, and read on from that
     * entry (the entries before it are the walk's first spans: a plain entry holds no
     * comma or bracket of the group's own). */
    Py_ssize_t had_lines = PyList_GET_SIZE(lines_out), had_items = PyList_GET_SIZE(items_out);
    Py_ssize_t k = 0, at = pos + 1, next = -1;
    while (open == '(') {
        int got = fs_entry_value(s, n, at, -1, lineno, protos, lines_out, items_out, &cache,
                                 &next);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
        k++;
        if (s[next] == ')') { /* the group's end: every entry made */
            result = Py_BuildValue("(nnO)", next + 1, k, Py_None);
            goto done;
        }
        at = next + 1;
    }
    Py_ssize_t end = match_end_of(PyUnicode_1BYTE_KIND, s, n, pos, &commas);
    if (end == -2)
        goto done;
    if (end < 0) { /* the group does not close: no entry made */
        if (PyList_SetSlice(lines_out, had_lines, PY_SSIZE_T_MAX, NULL) < 0 ||
            PyList_SetSlice(items_out, had_items, PY_SSIZE_T_MAX, NULL) < 0)
            goto done;
        result = Py_BuildValue("(nnN)", (Py_ssize_t)-1, (Py_ssize_t)0, PyList_New(0));
        goto done;
    }
    Py_ssize_t stop = end - 1, count = group_spans(&commas, pos, stop);
    for (; k < count; k++) {
        Py_ssize_t a, e;
        group_span(&commas, pos, stop, k, &a, &e);
        int got =
            fs_entry_value(s, n, a, e, lineno, protos, lines_out, items_out, &cache, NULL);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
    }
    if (k == count) {
        result = Py_BuildValue("(nnO)", end, k, Py_None);
        goto done;
    }
    PyObject *spans = group_span_list(&commas, pos, stop);
    if (spans != NULL)
        result = Py_BuildValue("(nnN)", end, k, spans);
done:
    fs_proto_cache_clear(&cache);
    if (commas.at != small)
        PyMem_Free(commas.at);
    return result;
}

/* fs_top_colon's body, for a constant `kind` each (see match_end_of) */
static inline __attribute__((always_inline)) void
top_colon_of(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t *colon,
             Py_ssize_t *arrow) {
    Py_ssize_t depth = 0, p = start < 0 ? 0 : start;
    *colon = *arrow = -1;
    while (p < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if (c == '"') {
            p = closing_quote(kind, data, p + 1, n) + 1;
            continue;
        }
        /* the reference reads s[p - 1] with Python's indexing: s[-1] at p == 0 */
        Py_UCS4 before = PyUnicode_READ(kind, data, p > 0 ? p - 1 : n - 1);
        if (c == '<' || c == '[' || c == '{' || c == '(') {
            depth++;
        } else if (c == '>' || c == ']' || c == '}' || c == ')') {
            if (c == '>' && before == '-') {
                if (depth == 0 && *colon >= 0)
                    *arrow = p + 1;
            } else {
                depth--;
            }
        } else if (c == ':' && depth == 0 && p > 0 && p + 1 < n && before == ' ' &&
                   PyUnicode_READ(kind, data, p + 1) == ' ') {
            *colon = p + 1;
            *arrow = -1;
        }
        p++;
    }
}

void fs_top_colon(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t *colon,
                  Py_ssize_t *arrow) {
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        top_colon_of(PyUnicode_1BYTE_KIND, data, n, start, colon, arrow);
        break;
    case PyUnicode_2BYTE_KIND:
        top_colon_of(PyUnicode_2BYTE_KIND, data, n, start, colon, arrow);
        break;
    default:
        top_colon_of(PyUnicode_4BYTE_KIND, data, n, start, colon, arrow);
    }
}

static PyObject *top_colon(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    PyObject *s;
    Py_ssize_t start, unused = 0;
    if (read_str_args(args, nargs, 2, &s, &start, &unused) < 0)
        return NULL;
    Py_ssize_t colon, arrow;
    fs_top_colon(PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), start, &colon,
                 &arrow);
    return Py_BuildValue("(nn)", colon, arrow);
}

/* -- word_lines: the lines of a block that hold any of some words ------------------------ */

/* Bytes by how often they occur in XLA and MLIR dumps, the commonest first (measured on
 * the cold bench's every-pass dumps); a byte not listed is rarer than all of these. */
static const char COMMON[] = " ea_nitdmr=os2,l1cufp30{\n}.4[]%\"()-6g8h5kx:y/>b7";

/* Each byte's place in COMMON (the length of COMMON for a byte not in it): rarer bytes
 * rank higher. Made at import (fs_rank_init). */
static unsigned char RANK[256];

static void fs_rank_init(void) {
    for (int c = 0; c < 256; c++)
        RANK[c] = (unsigned char)(sizeof COMMON);
    for (int k = (int)sizeof COMMON - 2; k >= 0; k--)
        RANK[(unsigned char)COMMON[k]] = (unsigned char)k;
}

/* Where in `w` (m >= 1 bytes) the rarest byte is (the first of the rarest): memchr stops
 * at its occurrences only. */
Py_ssize_t fs_anchor_of(const char *w, Py_ssize_t m) {
    Py_ssize_t best = 0;
    for (Py_ssize_t k = 1; k < m; k++)
        if (RANK[(unsigned char)w[k]] > RANK[(unsigned char)w[best]])
            best = k;
    return best;
}

/* The first occurrence of `w` (m >= 1 bytes, its rarest byte at `a`) in b[0, n), or NULL.
 * memchr finds the candidates for the rarest byte; memcmp checks the word (portable: no
 * memmem). Anchored on the first byte instead, `all-` stopped at every `a` of a dump. */
static const char *find_word(const char *b, Py_ssize_t n, const char *w, Py_ssize_t m,
                             Py_ssize_t a) {
    if (n < m)
        return NULL;
    const char *p = b + a;
    const char *last = b + (n - m) + a; /* the anchor of the last place `w` fits */
    while (p <= last) {
        p = memchr(p, w[a], (size_t)(last - p + 1));
        if (p == NULL)
            return NULL;
        if (memcmp(p - a, w, (size_t)m) == 0)
            return p - a;
        p++;
    }
    return NULL;
}

static int cmp_ssize(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* Whether `args` are (bytes block, tuple of non-empty bytes words), as `word_lines` and
 * `find_any` take them; else sets a TypeError naming `fn` and returns 0. */
static int block_and_words(PyObject *const *args, Py_ssize_t nargs, const char *fn) {
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(block: bytes, words: tuple of bytes)", fn);
        return 0;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args[1]); k++) {
        PyObject *word = PyTuple_GET_ITEM(args[1], k);
        if (!PyBytes_Check(word) || PyBytes_GET_SIZE(word) == 0) {
            PyErr_Format(PyExc_TypeError, "%s: each word must be non-empty bytes", fn);
            return 0;
        }
    }
    return 1;
}

static const char word_lines_doc[] =
    "word_lines(block, words) -> list of the start offsets (ascending, each once) of the "
    "lines of `block` (bytes) holding any of `words` (a tuple of non-empty bytes): see "
    "meshdiag.comms.scan.word_lines_py";

static PyObject *word_lines(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (!block_and_words(args, nargs, "word_lines"))
        return NULL;
    const char *b = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    PyObject *words = args[1];
    Py_ssize_t cap = 64, len = 0;
    Py_ssize_t *starts = PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
    if (starts == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(words); k++) {
        PyObject *word = PyTuple_GET_ITEM(words, k);
        const char *w = PyBytes_AS_STRING(word);
        Py_ssize_t m = PyBytes_GET_SIZE(word);
        Py_ssize_t a = fs_anchor_of(w, m);
        Py_ssize_t pos = 0;
        while (pos < n) {
            const char *hit = find_word(b + pos, n - pos, w, m, a);
            if (hit == NULL)
                break;
            Py_ssize_t at = hit - b, start = at;
            while (start > 0 && b[start - 1] != '\n')
                start--;
            if (len == cap) {
                Py_ssize_t *more = PyMem_Realloc(starts, (size_t)(cap *= 2) * sizeof(Py_ssize_t));
                if (more == NULL) {
                    PyMem_Free(starts);
                    return PyErr_NoMemory();
                }
                starts = more;
            }
            starts[len++] = start;
            const char *nl = memchr(hit, '\n', (size_t)(n - at));
            if (nl == NULL)
                break;
            pos = nl - b + 1; /* the rest of this line is in already */
        }
    }
    qsort(starts, (size_t)len, sizeof(Py_ssize_t), cmp_ssize);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < len; i++) {
        if (i > 0 && starts[i] == starts[i - 1])
            continue;
        PyObject *v = PyLong_FromSsize_t(starts[i]);
        if (v == NULL || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(v);
    }
    PyMem_Free(starts);
    return out;
}

static const char find_any_doc[] =
    "find_any(block, words) -> the offset of the first occurrence in `block` (bytes) of any "
    "of `words` (a tuple of non-empty bytes), -1 when none occurs: see "
    "meshdiag.comms.scan.find_any_py";

/* The first place before `limit` (<= n) in b[0, n) where one of the `count` words `ws`
 * whose rarest byte is `c` occurs (at `anchors[k]` in word k), or -1: one memchr pass over
 * the occurrences of `c` tries every word at each. The Shardy collectives all start with
 * `sdy.`, whose rarest byte is in every sharding line: one pass, not one a word. */
static Py_ssize_t find_anchored(const char *b, Py_ssize_t n, Py_ssize_t limit, PyObject **ws,
                                const Py_ssize_t *anchors, int count, char c) {
    Py_ssize_t best = -1, reach = 0; /* reach: the largest anchor index */
    for (int k = 0; k < count; k++)
        if (anchors[k] > reach)
            reach = anchors[k];
    const char *p = b, *end = b + n;
    while (p < end) {
        p = memchr(p, c, (size_t)(end - p));
        if (p == NULL)
            break;
        Py_ssize_t at = p - b;
        /* a word anchored here starts at `at - anchors[k]`: none beats `best` (or `limit`)
         * once `at - reach` is past it */
        Py_ssize_t bound = best >= 0 ? best : limit;
        if (at - reach >= bound)
            break;
        for (int k = 0; k < count; k++) {
            Py_ssize_t start = at - anchors[k], m = PyBytes_GET_SIZE(ws[k]);
            if (start < 0 || start >= bound || start + m > n)
                continue;
            if (memcmp(b + start, PyBytes_AS_STRING(ws[k]), (size_t)m) == 0) {
                best = start;
                bound = start;
            }
        }
        p++;
    }
    return best;
}

/* the words a call groups by their rarest byte, at most */
#define MAX_FIND_WORDS 16

static PyObject *find_any(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (!block_and_words(args, nargs, "find_any"))
        return NULL;
    const char *b = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t count = PyTuple_GET_SIZE(args[1]), best = -1;
    if (count <= MAX_FIND_WORDS) { /* grouped by rarest byte: one pass per group */
        PyObject *ws[MAX_FIND_WORDS];
        Py_ssize_t anchors[MAX_FIND_WORDS];
        int done[MAX_FIND_WORDS] = {0};
        for (Py_ssize_t k = 0; k < count; k++) {
            ws[k] = PyTuple_GET_ITEM(args[1], k);
            anchors[k] = fs_anchor_of(PyBytes_AS_STRING(ws[k]), PyBytes_GET_SIZE(ws[k]));
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            if (done[k])
                continue;
            char c = PyBytes_AS_STRING(ws[k])[anchors[k]];
            PyObject *group[MAX_FIND_WORDS];
            Py_ssize_t group_anchors[MAX_FIND_WORDS];
            int g = 0;
            for (Py_ssize_t j = k; j < count; j++) {
                if (!done[j] && PyBytes_AS_STRING(ws[j])[anchors[j]] == c) {
                    done[j] = 1;
                    group[g] = ws[j];
                    group_anchors[g++] = anchors[j];
                }
            }
            Py_ssize_t hit = find_anchored(b, n, best >= 0 ? best : n, group, group_anchors, g, c);
            if (hit >= 0)
                best = hit;
        }
        return PyLong_FromSsize_t(best);
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *word = PyTuple_GET_ITEM(args[1], k);
        const char *w = PyBytes_AS_STRING(word);
        Py_ssize_t m = PyBytes_GET_SIZE(word);
        /* only an occurrence starting before the best so far can beat it */
        Py_ssize_t limit = best < 0 ? n : best - 1 + m;
        if (limit > n)
            limit = n;
        const char *hit = find_word(b, limit, w, m, fs_anchor_of(w, m));
        if (hit != NULL)
            best = hit - b;
    }
    return PyLong_FromSsize_t(best);
}

static const char count_lines_doc[] =
    "count_lines(buffer) -> the number of newline bytes in `buffer` (any object with the "
    "buffer interface: bytes, a bytearray, a memoryview): see meshdiag.ir.parts.count_lines_py";

static PyObject *count_lines(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    n = count_newlines((const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(n);
}

static const char all_ascii_doc[] =
    "all_ascii(buf, start, end) -> bool: whether buf[start:end] (bytes) is all ASCII, as\n"
    "buf[start:end].isascii() says, without the copy.";

static PyObject *all_ascii(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t start, end;
    if (nargs != 3 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "all_ascii(buf: bytes, start, end)");
        return NULL;
    }
    if (as_index(args[1], "all_ascii", "start", &start) < 0 ||
        as_index(args[2], "all_ascii", "end", &end) < 0)
        return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    if (start < 0 || end > n || start > end) {
        PyErr_Format(PyExc_ValueError, "all_ascii: [%zd:%zd] outside the buffer (length %zd)",
                     start, end, n);
        return NULL;
    }
    return PyBool_FromLong(
        fs_all_ascii(PyBytes_AS_STRING(args[0]) + start, end - start));
}

static const char parent_death_signal_doc[] =
    "parent_death_signal(sig) -> bool: ask the kernel to send this process `sig` when its "
    "parent dies (Linux prctl PR_SET_PDEATHSIG); False where there is no such request. See "
    "meshdiag.pipeline.inspect._die_with_parent (ctypes did it in 5 ms a worker).";

static PyObject *parent_death_signal(PyObject *Py_UNUSED(self), PyObject *arg) {
    long sig = PyLong_AsLong(arg);
    if (sig == -1 && PyErr_Occurred())
        return NULL;
#ifdef __linux__
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0) == 0)
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"split_top", (PyCFunction)(void (*)(void))split_top, METH_FASTCALL,
     "split_top(s, start, end): see meshdiag.ir.text.split_top_py"},
    {"top_colon", (PyCFunction)(void (*)(void))top_colon, METH_FASTCALL,
     "top_colon(body, start) -> (colon, arrow): see meshdiag.ir.text.op_result_types_py"},
    {"scan_known", (PyCFunction)(void (*)(void))scan_known, METH_FASTCALL, scan_known_doc},
    {"scan_plain", (PyCFunction)(void (*)(void))scan_plain, METH_FASTCALL, scan_plain_doc},
    {"match_end", (PyCFunction)(void (*)(void))match_end, METH_FASTCALL, match_end_doc},
    {"split_group", (PyCFunction)(void (*)(void))split_group, METH_FASTCALL, split_group_doc},
    {"entry_group", (PyCFunction)(void (*)(void))entry_group, METH_FASTCALL, entry_group_doc},
    {"word_lines", (PyCFunction)(void (*)(void))word_lines, METH_FASTCALL, word_lines_doc},
    {"find_any", (PyCFunction)(void (*)(void))find_any, METH_FASTCALL, find_any_doc},
    {"count_lines", (PyCFunction)count_lines, METH_O, count_lines_doc},
    {"all_ascii", (PyCFunction)(void (*)(void))all_ascii, METH_FASTCALL, all_ascii_doc},
    {"line_print", (PyCFunction)line_print, METH_O, line_print_doc},
    {"parent_death_signal", (PyCFunction)parent_death_signal, METH_O, parent_death_signal_doc},
    {"constraint_fields", (PyCFunction)(void (*)(void))fs_constraint_fields, METH_FASTCALL,
     fs_constraint_fields_doc},
    {"entry_fields", (PyCFunction)(void (*)(void))fs_entry_fields, METH_FASTCALL,
     fs_entry_fields_doc},
    {"op_fields", (PyCFunction)(void (*)(void))fs_op_fields, METH_FASTCALL, fs_op_fields_doc},
    {"hlo_fields", (PyCFunction)(void (*)(void))fs_hlo_fields, METH_FASTCALL, fs_hlo_fields_doc},
    {"entry_values", (PyCFunction)(void (*)(void))fs_entry_values, METH_FASTCALL,
     fs_entry_values_doc},
    {"plain_line", (PyCFunction)(void (*)(void))fs_plain_line_py, METH_FASTCALL,
     fs_plain_line_doc},
    {"values_json", (PyCFunction)(void (*)(void))fs_values_json, METH_FASTCALL,
     fs_values_json_doc},
    {"text_groups", (PyCFunction)(void (*)(void))fs_text_groups, METH_FASTCALL,
     fs_text_groups_doc},
    {"new_keys", (PyCFunction)(void (*)(void))fs_new_keys, METH_FASTCALL, fs_new_keys_doc},
    {"fresh_entries", (PyCFunction)(void (*)(void))fs_fresh_entries, METH_FASTCALL,
     fs_fresh_entries_doc},
    {"of_class", (PyCFunction)(void (*)(void))fs_of_class, METH_FASTCALL, fs_of_class_doc},
    {"module_rows", (PyCFunction)(void (*)(void))fs_module_rows, METH_FASTCALL,
     fs_module_rows_doc},
    {"adopt_dataclass", (PyCFunction)fs_value_adopt, METH_O, fs_value_adopt_doc},
    {"grid_text", (PyCFunction)(void (*)(void))fs_grid_text, METH_FASTCALL, fs_grid_text_doc},
    {"whole_grid_text", (PyCFunction)(void (*)(void))fs_whole_grid_text, METH_FASTCALL,
     fs_whole_grid_text_doc},
    {"whole_table_text", (PyCFunction)(void (*)(void))fs_whole_table_text, METH_FASTCALL,
     fs_whole_table_text_doc},
    {"read_small", (PyCFunction)(void (*)(void))fs_read_small, METH_FASTCALL, fs_read_small_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fastscan_module = {
    PyModuleDef_HEAD_INIT,
    "meshdiag.ir.fast._fastscan",
    "Native candidate-line scanner (see lines.scan_known_py for the semantics).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__fastscan(void) {
    if (build_tables() < 0 || fs_values_init() < 0 || fs_keys_init() < 0 || fs_groups_init() < 0)
        return NULL;
#ifdef FS_TEDDY
    build_teddy();
#endif
    fs_rank_init();
    PyObject *m = PyModule_Create(&fastscan_module);
    if (m == NULL)
        return NULL;
    /* the words it was built with, as a tuple of str (words.WORDS, tested) */
    PyObject *words = PyTuple_New(N_NEEDLES);
    if (words == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int k = 0; k < N_NEEDLES; k++) {
        PyObject *w = PyUnicode_FromString(NEEDLES[k]);
        if (w == NULL) {
            Py_DECREF(words);
            Py_DECREF(m);
            return NULL;
        }
        PyTuple_SET_ITEM(words, k, w);
    }
    if (PyModule_AddObject(m, "WORDS", words) < 0) {
        Py_DECREF(words);
        Py_DECREF(m);
        return NULL;
    }
#ifdef FS_TEDDY
    int simd = teddy_on;
#else
    int simd = 0;
#endif
    /* whether candidates are found 32 bytes at a time (AVX2: the tests ask) */
    if (PyModule_AddObject(m, "SIMD", PyBool_FromLong(simd)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *value = fs_value_type();
    if (value == NULL || PyModule_AddObject(m, "Value", value) < 0) {
        Py_XDECREF(value);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
