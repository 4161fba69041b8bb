/* The JSON of a module's values, written in C: `pipeline.inspect.values_json_text_py`
 * (its twin) a value at a time, the same text byte for byte.
 *
 * Only a value's name, line, column and shapes are its own; the rest of its text is asked
 * of Python once per distinct (kind, op) (`head_of`) and (dtype, notation, sharding text,
 * mesh, GSPMD text) (`tail_of`) and kept in the caller's dicts (the run's), the GSPMD text
 * once per distinct tiled form of the call (`gspmd_of`, by identity: the values are alive
 * through the call). A name that JSON must escape is
 * quoted by `quote` (json's own encoder). A big file of new lines has a million values:
 * 1.3 us each in Python.
 */
#include "_fastscan.h"

#include <stdio.h>
#include <string.h>

/* The text written so far, in the bytes object the call returns (written in place, cut
 * to its length at the end; NULL once a resize of it failed, which freed it) */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
    PyObject *bytes;
} Buf;

/* Room for `n` more bytes: 0, or -1 with an error set */
static __attribute__((noinline)) int grow(Buf *b, Py_ssize_t n) {
    Py_ssize_t cap = b->cap;
    while (cap < b->len + n) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (_PyBytes_Resize(&b->bytes, cap) < 0) {
        b->data = NULL;
        return -1;
    }
    b->data = PyBytes_AS_STRING(b->bytes);
    b->cap = cap;
    return 0;
}

/* s[0:n] written: a few bytes at a time (a value's ints, names and commas) without a
 * call to memcpy each */
static inline int put(Buf *b, const char *s, Py_ssize_t n) {
    if (b->len + n > b->cap && grow(b, n) < 0)
        return -1;
    char *d = b->data + b->len;
    if (n <= 16) {
        for (Py_ssize_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        memcpy(d, s, (size_t)n);
    }
    b->len += n;
    return 0;
}

#define PUT(b, lit) put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* An ASCII str as it is; 1 when `o` is not one (the caller falls back to Python) */
static int put_ascii(Buf *b, PyObject *o) {
    if (!PyUnicode_Check(o) || !PyUnicode_IS_ASCII(o))
        return 1;
    return put(b, (const char *)PyUnicode_DATA(o), PyUnicode_GET_LENGTH(o));
}

/* A long long as str() writes an int */
static int put_ll(Buf *b, long long v) {
    /* the digits from the last, two at a time, as %lld prints them: snprintf was a quarter
     * of writing a big file's values (a line, a column and the dims of every value), and
     * one digit a division half of what is left */
    static const char PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "93949596979899";
    char tmp[24];
    char *end = tmp + sizeof tmp, *p = end;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) {
        const char *two = PAIRS + 2 * (u % 100);
        u /= 100;
        *--p = two[1];
        *--p = two[0];
    }
    if (u >= 10) {
        *--p = PAIRS[2 * u + 1];
        *--p = PAIRS[2 * u];
    } else {
        *--p = (char)('0' + u);
    }
    if (v < 0)
        *--p = '-';
    return put(b, p, (Py_ssize_t)(end - p));
}

/* An int as str() writes it (Python's own for one a long long does not hold) */
static int put_int(Buf *b, PyObject *o) {
    if (!PyLong_CheckExact(o))
        return 1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow) {
        PyObject *s = PyObject_Str(o);
        if (s == NULL)
            return -1;
        int r = put_ascii(b, s);
        Py_DECREF(s);
        return r;
    }
    return put_ll(b, v);
}

/* A shape: null, or its dims as a JSON list (a shape kept as numbers, `kept`, when it is
 * one: rank >= 0) */
static int put_shape(Buf *b, PyObject *shape, const FsShape *kept) {
    if (kept != NULL && kept->rank >= 0) {
        if (PUT(b, "[") < 0)
            return -1;
        for (int32_t i = 0; i < kept->rank; i++)
            if ((i > 0 && PUT(b, ", ") < 0) || put_ll(b, kept->dims[i]) < 0)
                return -1;
        return PUT(b, "]");
    }
    if (shape == Py_None)
        return PUT(b, "null");
    if (!PyTuple_Check(shape))
        return 1;
    if (PUT(b, "[") < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        int r;
        if (i > 0 && PUT(b, ", ") < 0)
            return -1;
        if ((r = put_int(b, PyTuple_GET_ITEM(shape, i))) != 0)
            return r;
    }
    return PUT(b, "]");
}

/* A name as json's `encode_basestring_ascii` quotes it: as it is when every character is
 * printable ASCII and neither `"` nor `\`, else by `quote` */
static int put_name(Buf *b, PyObject *name, PyObject *quote) {
    if (!PyUnicode_Check(name))
        return 1;
    if (PyUnicode_IS_ASCII(name)) {
        const unsigned char *s = (const unsigned char *)PyUnicode_DATA(name);
        Py_ssize_t n = PyUnicode_GET_LENGTH(name), i = 0;
        while (i < n && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
            i++;
        if (i == n)
            return PUT(b, "\"") < 0 || put(b, (const char *)s, n) < 0 || PUT(b, "\"") < 0
                       ? -1
                       : 0;
    }
    PyObject *q = PyObject_CallOneArg(quote, name);
    if (q == NULL)
        return -1;
    int r = put_ascii(b, q);
    Py_DECREF(q);
    return r;
}

/* memo[key] or fn(*key) kept there: a new reference, NULL with an error set */
static PyObject *memo_call(PyObject *memo, PyObject *key, PyObject *fn) {
    PyObject *hit = PyDict_GetItemWithError(memo, key);
    if (hit != NULL)
        return Py_NewRef(hit);
    if (PyErr_Occurred())
        return NULL;
    hit = PyObject_Call(fn, key, NULL);
    if (hit == NULL || PyDict_SetItem(memo, key, hit) < 0) {
        Py_XDECREF(hit);
        return NULL;
    }
    return hit;
}

/* The last answers of a memo and the objects each was asked with (strong references): a
 * module's values come in runs of a few shardings, kinds and types, and the same objects
 * give the same answer without a key tuple or a lookup. Kept for the last one alone, a
 * big file's values (alternating between a few shardings) missed it for most of them, and
 * the lookups they made instead (a tuple of five, hashed) were a third of writing them. */
#define LAST_KEYS 5
#define LAST_SLOTS 8
typedef struct {
    PyObject *k[LAST_KEYS], *val;
} Slot;
typedef struct {
    Slot s[LAST_SLOTS]; /* filled in order, then overwritten from the oldest */
    int next;
} Last;

static PyObject *last_hit(const Last *m, PyObject *const *k, int n) {
    /* the newest first: a run of values asks the same again */
    for (int j = 0, at = m->next; j < LAST_SLOTS; j++) {
        at = at == 0 ? LAST_SLOTS - 1 : at - 1;
        const Slot *s = &m->s[at];
        if (s->val == NULL)
            return NULL; /* (none is kept before an empty slot) */
        int i = 0;
        while (i < n && s->k[i] == k[i])
            i++;
        if (i == n)
            return Py_NewRef(s->val);
    }
    return NULL;
}

static void last_keep(Last *m, PyObject *const *k, int n, PyObject *val) {
    Slot *s = &m->s[m->next];
    m->next = (m->next + 1) % LAST_SLOTS;
    for (int i = 0; i < n; i++)
        Py_XSETREF(s->k[i], Py_NewRef(k[i]));
    Py_XSETREF(s->val, Py_NewRef(val));
}

static void last_drop(Last *m) {
    for (int j = 0; j < LAST_SLOTS; j++) {
        for (int i = 0; i < LAST_KEYS; i++)
            Py_CLEAR(m->s[j].k[i]);
        Py_CLEAR(m->s[j].val);
    }
    m->next = 0;
}

/* One value's JSON object, at its own line or at `line` (not NULL: a prototype of a shared
 * line, `LineValues`, at one of its occurrences); 1 when it is not what the twin expects
 * (the caller falls back) */
static int put_value(Buf *b, PyObject *v, PyObject *line, PyObject *gspmd_of, PyObject *head_of,
                     PyObject *tail_of, PyObject *quote, PyObject *gspmds, PyObject *heads,
                     PyObject *tails, Last *last) {
    PyObject *all[FV_N];
    FsShape kept; /* (written from the numbers when kept so) */
    int r = fs_fields_kept(v, all, &kept); /* borrowed; v keeps them */
    if (r != 0)
        return r;
    if (line != NULL)
        all[FV_LINE] = line;
    PyObject *const f[12] = {all[FV_NAME],  all[FV_LINE],       all[FV_COLUMN], all[FV_KIND],
                             all[FV_OP],    all[FV_SHAPE],      all[FV_LOCAL_SHAPE],
                             all[FV_DTYPE], all[FV_NOTATION],   all[FV_TEXT],
                             all[FV_MESH_NAME], all[FV_HLO]};
    r = 1;
    PyObject *g = last_hit(&last[0], &f[11], 1), *head = NULL, *tail = NULL, *key = NULL;
    PyObject *id = NULL;
    if (g == NULL) {
        id = PyLong_FromVoidPtr(f[11]);
        if (id == NULL) {
            r = -1;
            goto done;
        }
        g = PyDict_GetItemWithError(gspmds, id);
        if (g != NULL) {
            Py_INCREF(g);
        } else if (!PyErr_Occurred()) {
            g = PyObject_CallOneArg(gspmd_of, v);
            if (g != NULL && PyDict_SetItem(gspmds, id, g) < 0)
                Py_CLEAR(g);
        }
        if (g == NULL) {
            r = -1;
            goto done;
        }
        last_keep(&last[0], &f[11], 1, g);
    }
    PyObject *const head_key[2] = {f[3], f[4]};
    head = last_hit(&last[1], head_key, 2);
    if (head == NULL) {
        key = PyTuple_Pack(2, f[3], f[4]);
        head = key == NULL ? NULL : memo_call(heads, key, head_of);
        Py_XDECREF(key);
        if (head != NULL)
            last_keep(&last[1], head_key, 2, head);
    }
    PyObject *const tail_key[5] = {f[7], f[8], f[9], f[10], g};
    tail = head == NULL ? NULL : last_hit(&last[2], tail_key, 5);
    if (head != NULL && tail == NULL) {
        key = PyTuple_Pack(5, f[7], f[8], f[9], f[10], g);
        tail = key == NULL ? NULL : memo_call(tails, key, tail_of);
        Py_XDECREF(key);
        if (tail != NULL)
            last_keep(&last[2], tail_key, 5, tail);
    }
    if (tail == NULL) {
        r = -1;
        goto done;
    }
    if ((r = PUT(b, "{\"name\": ")) != 0 || (r = put_name(b, f[0], quote)) != 0 ||
        (r = PUT(b, ", \"line\": ")) != 0 || (r = put_int(b, f[1])) != 0 ||
        (r = PUT(b, ", \"column\": ")) != 0 || (r = put_int(b, f[2])) != 0 ||
        (r = PUT(b, ", ")) != 0 || (r = put_ascii(b, head)) != 0 ||
        (r = PUT(b, "\"shape\": ")) != 0 || (r = put_shape(b, f[5], &kept)) != 0 ||
        (r = PUT(b, ", \"local_shape\": ")) != 0 || (r = put_shape(b, f[6], NULL)) != 0 ||
        (r = put_ascii(b, tail)) != 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(id);
    Py_XDECREF(g);
    Py_XDECREF(head);
    Py_XDECREF(tail);
    return r;
}

const char fs_values_json_doc[] =
    "values_json(values, gspmd_of, head_of, tail_of, quote, heads, tails[, prefix, suffix])\n"
    "    -> bytes or None\n\n"
    "The JSON list of `values` as pipeline.inspect.values_json_text_py writes it, as bytes,\n"
    "between the bytes `prefix` and `suffix` (none by default: a module's whole JSON is\n"
    "its head, this list and its end, made at once): each value's name (quoted by `quote`\n"
    "when it must be escaped), line, column and shapes, and head_of(kind, op) and\n"
    "tail_of(dtype, notation, text, mesh_name, gspmd_of(value)), kept in the dicts `heads`\n"
    "and `tails` (gspmd_of once per distinct tiled form of the call). `values`: a list of\n"
    "them, or a module's columns (lines, items, partitioned, Value): an item of another\n"
    "class than Value holds its line's values in `protos` (`partitioned` in a partitioned\n"
    "module), written at the item's line, as ModuleReport.values gives them. None when a\n"
    "value is not as the twin expects it.";

/* The `protos` of a shared line's entry and their name in a partitioned module */
static PyObject *S_PROTOS, *S_PARTITIONED;

/* Bytes a value's JSON takes, about (the buffer is made that big at once: grown by
 * doubling, a big module's was copied several times over) */
#define VALUE_BYTES 256
#define FIRST_BYTES (1 << 20)

PyObject *fs_values_json(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    PyObject *values = nargs == 7 || nargs == 9 ? args[0] : NULL, *lines = NULL;
    PyObject *value_cls = NULL, *prefix = nargs == 9 ? args[7] : NULL;
    PyObject *suffix = nargs == 9 ? args[8] : NULL;
    static const char NOTHING[] = "";
    const char *pre = NOTHING, *post = NOTHING;
    Py_ssize_t pre_n = 0, post_n = 0;
    if (prefix != NULL && PyBytes_Check(prefix) && PyBytes_Check(suffix)) {
        pre = PyBytes_AS_STRING(prefix);
        pre_n = PyBytes_GET_SIZE(prefix);
        post = PyBytes_AS_STRING(suffix);
        post_n = PyBytes_GET_SIZE(suffix);
    } else if (prefix != NULL) {
        PyErr_SetString(PyExc_TypeError, "values_json: prefix and suffix must be bytes");
        return NULL;
    }
    int partitioned = 0;
    if (values != NULL && PyTuple_Check(values) && PyTuple_GET_SIZE(values) == 4) {
        lines = PyTuple_GET_ITEM(values, 0);
        value_cls = PyTuple_GET_ITEM(values, 3);
        partitioned = PyObject_IsTrue(PyTuple_GET_ITEM(values, 2));
        values = PyTuple_GET_ITEM(values, 1);
        if (partitioned < 0)
            return NULL;
        if (!PyList_Check(lines) || !PyList_Check(values) ||
            PyList_GET_SIZE(lines) != PyList_GET_SIZE(values) || !PyType_Check(value_cls))
            values = NULL;
    }
    if (values == NULL || !PyList_Check(values) || !PyDict_Check(args[5]) ||
        !PyDict_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "values_json(values: list or (lines, items, partitioned, Value), "
                        "gspmd_of, head_of, tail_of, quote, heads: dict, tails: dict)");
        return NULL;
    }
    if (S_PROTOS == NULL) {
        S_PROTOS = PyUnicode_InternFromString("protos");
        S_PARTITIONED = PyUnicode_InternFromString("partitioned");
        if (S_PROTOS == NULL || S_PARTITIONED == NULL)
            return NULL;
    }
    PyObject *heads = args[5], *tails = args[6];
    PyObject *gspmds = PyDict_New();
    Buf b = {NULL, 0, 0, NULL};
    PyObject *out = NULL;
    Last last[3];
    memset(last, 0, sizeof last);
    /* made for the values at once, up to FIRST_BYTES (grown as it goes past that: a
     * million shared lines of no values write little) */
    Py_ssize_t items = PyList_GET_SIZE(values);
    b.cap = items < FIRST_BYTES / VALUE_BYTES ? items * VALUE_BYTES + 2 : FIRST_BYTES;
    if (pre_n + post_n < FIRST_BYTES)
        b.cap += pre_n + post_n;
    b.bytes = gspmds == NULL ? NULL : PyBytes_FromStringAndSize(NULL, b.cap);
    b.data = b.bytes == NULL ? NULL : PyBytes_AS_STRING(b.bytes);
    int r = b.bytes == NULL ? -1 : put(&b, pre, pre_n);
    if (r == 0)
        r = PUT(&b, "[");
    int first = 1;
    /* (the lists are read again at each step: the callbacks could change them) */
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(values); i++) {
        PyObject *v = PyList_GET_ITEM(values, i), *line = NULL, *protos = NULL;
        Py_INCREF(v); /* kept whatever the callbacks do to the list */
        PyObject *const *vs = &v; /* the values this item writes: itself, or... */
        Py_ssize_t n = 1;
        if (lines != NULL && Py_TYPE(v) != (PyTypeObject *)value_cls) {
            /* ...a shared line's values, at this occurrence's line */
            line = i < PyList_GET_SIZE(lines) ? PyList_GET_ITEM(lines, i) : NULL;
            protos = line == NULL ? NULL
                                  : PyObject_GetAttr(v, partitioned ? S_PARTITIONED : S_PROTOS);
            if (protos == NULL || !PyTuple_Check(protos)) {
                if (protos == NULL && line != NULL &&
                    !PyErr_ExceptionMatches(PyExc_AttributeError)) {
                    r = -1; /* an error of its own */
                } else {
                    PyErr_Clear();
                    r = 1; /* not what the twin expects: it writes this module */
                }
                Py_XDECREF(protos);
                Py_DECREF(v);
                break;
            }
            Py_INCREF(line);
            vs = &PyTuple_GET_ITEM(protos, 0);
            n = PyTuple_GET_SIZE(protos);
        }
        for (Py_ssize_t k = 0; r == 0 && k < n; k++) {
            if (!first && (r = PUT(&b, ", ")) != 0)
                break;
            first = 0;
            r = put_value(&b, vs[k], line, args[1], args[2], args[3], args[4], gspmds, heads,
                          tails, last);
        }
        Py_XDECREF(line);
        Py_XDECREF(protos);
        Py_DECREF(v);
    }
    for (int k = 0; k < 3; k++)
        last_drop(&last[k]);
    if (r == 0)
        r = PUT(&b, "]");
    if (r == 0)
        r = put(&b, post, post_n);
    if (r == 0) {
        if (_PyBytes_Resize(&b.bytes, b.len) == 0) /* (on failure it freed them) */
            out = Py_NewRef(b.bytes);
    } else if (r > 0) {
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(b.bytes);
    Py_XDECREF(gspmds);
    return out;
}
