/* The plain annotated-line forms of meshdiag/ir/fields.py, read in one pass in C.
 *
 * `constraint_fields` and `entry_fields` give what `fields.constraint_fields_py` and
 * `fields.entry_fields_py` (their references) give: the fields of a line in its one plain
 * form, or None for any other line. They read ASCII text only; fields.py hands any other
 * line to the reference (whose `\w` and `\s` also match non-ASCII characters).
 *
 * The regexes they stand for (fields.py), matched whole (LOC: ` loc(#name)`, ` loc("text")`
 * or ` loc("file":line:column)`, the location MLIR prints after an op or an argument with
 * debug info):
 *   constraint: [ \t]*(%[\w.$\-]+) = sdy\.(sharding_constraint|reshard) %[\w.$#\-]+
 *               (<@[^<>]*>) : tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)>(LOC)?[ \t]*
 *   entry:      \s*(%[\w.$\-]+): tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)>
 *               \{sdy\.sharding = (#sdy\.sharding<@[^<>]*>)\}(LOC)?\s*
 *               or the same with \{mhlo\.sharding = "([^"\\]*)"\} (a GSPMD string)
 * Neither needs backtracking: each part ends at the first character it cannot take (the
 * dims' digits must be followed by `x`; an element type cannot start with a digit).
 */
#include "_fastscan.h"

#include <string.h>

typedef struct {
    const char *s;
    Py_ssize_t i, n;
} Cursor;

static inline int is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Python's `\s` over ASCII: the characters str.isspace() accepts */
static inline int is_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

static int take(Cursor *c, const char *lit) {
    Py_ssize_t m = (Py_ssize_t)strlen(lit);
    if (c->n - c->i < m || memcmp(c->s + c->i, lit, (size_t)m) != 0)
        return 0;
    c->i += m;
    return 1;
}

/* `%` and one or more of [\w.$\-] (with `#` too when `hash`): the name's end, or -1 */
static Py_ssize_t take_name(Cursor *c, int hash) {
    if (c->i >= c->n || c->s[c->i] != '%')
        return -1;
    Py_ssize_t j = c->i + 1;
    while (j < c->n) {
        char ch = c->s[j];
        if (!(is_word(ch) || ch == '.' || ch == '$' || ch == '-' || (hash && ch == '#')))
            break;
        j++;
    }
    if (j == c->i + 1)
        return -1;
    c->i = j;
    return j;
}

/* `<@[^<>]*>` from the cursor: the index after its `>`, or -1 */
static Py_ssize_t take_mesh_ref(Cursor *c) {
    if (!take(c, "<@"))
        return -1;
    Py_ssize_t j = c->i;
    while (j < c->n && c->s[j] != '<' && c->s[j] != '>')
        j++;
    if (j >= c->n || c->s[j] != '>')
        return -1;
    c->i = j + 1;
    return c->i;
}

/* The bytes `take_closed_ref` stops at */
static const unsigned char REF_STOP[256] = {
    ['"'] = 1, ['<'] = 1, ['>'] = 1, ['['] = 1, [']'] = 1,
    ['{'] = 1, ['}'] = 1, ['('] = 1, [')'] = 1,
};
/* brackets a sharding may nest before `take_closed_ref` leaves the check to the matcher */
#define REF_DEPTH 32

/* `take_mesh_ref`, and whether the bracket matcher (fs_match_end, from the `<`) closes the
 * sharding at its `>` too, in one pass: the index after the `>` when both hold, else -1
 * (the line is then not plain: a `<` or `>` in a quoted name, a `->`, brackets that do not
 * match, no `>`). `*checked` 0: nested deeper than REF_DEPTH, the matcher not asked (the
 * caller asks `closed_at`). Reading the sharding twice, first for its end, then for its
 * brackets, was a tenth of reading a plain line. */
static Py_ssize_t take_closed_ref(Cursor *c, int *checked) {
    *checked = 1;
    Py_ssize_t from = c->i;
    if (!take(c, "<@"))
        return -1;
    const unsigned char *s = (const unsigned char *)c->s;
    Py_ssize_t j = c->i, n = c->n;
    char closers[REF_DEPTH];
    int depth = 0;
    while (j < n) {
        unsigned char b = s[j];
        if (!REF_STOP[b]) {
            j++;
            continue;
        }
        switch (b) {
        case '"': /* a quoted name: no `<` or `>` in it, escaped or not */
            for (j++; j < n && s[j] != '"'; j++) {
                if (s[j] == '\\')
                    j++;
                if (j < n && (s[j] == '<' || s[j] == '>'))
                    return -1;
            }
            if (j >= n)
                return -1;
            break;
        case '>':
            if (s[j - 1] == '-' || depth > 0)
                return -1;
            c->i = j + 1;
            return c->i;
        case '[':
        case '{':
        case '(':
            if (depth == REF_DEPTH) { /* (deep: the two passes) */
                c->i = from;
                *checked = 0;
                return take_mesh_ref(c);
            }
            closers[depth++] = b == '[' ? ']' : b == '{' ? '}' : ')';
            break;
        case '<':
            return -1;
        default: /* `]`, `}`, `)` */
            if (depth == 0 || closers[depth - 1] != (char)b)
                return -1;
            depth--;
        }
        j++;
    }
    return -1;
}

/* An optional ` loc(#name)`, ` loc("text")` or ` loc("file":line:column)` (no escapes in
 * the text) from the cursor: its span in
 * *a, *b (empty when there is none); 0 when ` loc(` starts something else */
static int take_loc(Cursor *c, Py_ssize_t *a, Py_ssize_t *b) {
    *a = *b = c->i;
    if (!take(c, " loc("))
        return 1;
    Py_ssize_t j = c->i;
    if (j < c->n && c->s[j] == '#') {
        j++;
        while (j < c->n && (is_word(c->s[j]) || c->s[j] == '.' || c->s[j] == '$' ||
                            c->s[j] == '-'))
            j++;
        if (j == c->i + 1)
            return 0;
    } else if (j < c->n && c->s[j] == '"') {
        j++;
        while (j < c->n && c->s[j] != '"' && c->s[j] != '\\')
            j++;
        if (j >= c->n || c->s[j] != '"')
            return 0;
        j++;
        /* a file location: `"file":line:column` */
        if (j + 1 < c->n && c->s[j] == ':' && is_digit(c->s[j + 1])) {
            for (int part = 0; part < 2; part++) {
                if (j >= c->n || c->s[j] != ':' || j + 1 >= c->n || !is_digit(c->s[j + 1]))
                    return 0;
                j++;
                while (j < c->n && is_digit(c->s[j]))
                    j++;
            }
        }
    } else {
        return 0;
    }
    c->i = j;
    if (!take(c, ")"))
        return 0;
    *b = c->i;
    return 1;
}

/* The dim written at s[*k] (its digits; *k then at the character after them) as an int:
 * a new reference, NULL with an error set */
static PyObject *written_dim(const char *s, Py_ssize_t *k) {
    Py_ssize_t a = *k, b = a;
    while (is_digit(s[b]))
        b++;
    *k = b;
    if (b - a <= 18) {
        long long x = 0;
        for (Py_ssize_t j = a; j < b; j++)
            x = x * 10 + (s[j] - '0');
        return fs_int_piece(x);
    }
    /* more digits than a long long holds: Python's own conversion */
    PyObject *digits = PyUnicode_FromStringAndSize(s + a, b - a);
    PyObject *v = digits == NULL ? NULL : PyLong_FromUnicodeObject(digits, 10);
    Py_XDECREF(digits);
    return v;
}

/* The tuple of `ndims` dims: the numbers `kept`, or else those written from s[a] on
 * (`16x8x`); a new reference, NULL with an error set. Ints only: out of the collector's
 * lists (never in a cycle; a big file makes many) */
static PyObject *dims_tuple(Py_ssize_t ndims, const int32_t *kept, const char *s, Py_ssize_t a) {
    PyObject *shape = PyTuple_New(ndims);
    if (shape == NULL)
        return NULL;
    for (Py_ssize_t d = 0, k = a; d < ndims; d++, k++) { /* (k++: the `x`) */
        PyObject *v = kept != NULL ? fs_int_piece(kept[d]) : written_dim(s, &k);
        if (v == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, d, v);
    }
    PyObject_GC_UnTrack(shape);
    return shape;
}

PyObject *fs_shape_tuple(const FsShape *shape) {
    if (shape->rank < 0)
        return Py_NewRef(shape->tuple);
    return dims_tuple(shape->rank, shape->dims, NULL, 0);
}

/* `((?:\d+x)*)([a-zA-Z!][\w.]*)>` from the cursor: the dims in *shape (`FsShape`: kept
 * as numbers where they fit, else a tuple of int), the element type's span in *dt, *dt_end;
 * 1, 0 when the text has another form, -1 with an error set when Python fails */
static int take_type(Cursor *c, Py_ssize_t *dt, Py_ssize_t *dt_end, FsShape *shape) {
    /* the form first, keeping the dims while they fit (a tuple made at once otherwise: a
     * list grown and copied into one was three allocations a value) */
    const char *s = c->s;
    Py_ssize_t i = c->i, n = c->n, ndims = 0;
    int fits = 1;
    shape->tuple = NULL;
    while (i < n && is_digit(s[i])) {
        Py_ssize_t a = i;
        long long x = 0;
        while (i < n && is_digit(s[i])) {
            if (i - a < 10)
                x = x * 10 + (s[i] - '0');
            i++;
        }
        if (i >= n || s[i] != 'x')
            return 0;
        i++; /* the `x` */
        if (ndims < FS_KEPT_DIMS && i - 1 - a <= 10 && x <= INT32_MAX)
            shape->dims[ndims] = (int32_t)x;
        else
            fits = 0;
        ndims++;
    }
    if (i >= n)
        return 0;
    char first = s[i];
    if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '!'))
        return 0;
    Py_ssize_t type_a = i++;
    while (i < n && (is_word(s[i]) || s[i] == '.'))
        i++;
    if (i >= n || s[i] != '>')
        return 0;
    if (fits) {
        shape->rank = (int32_t)ndims;
    } else if ((shape->tuple = dims_tuple(ndims, NULL, s, c->i)) == NULL) {
        return -1;
    } else {
        shape->rank = -1;
    }
    *dt = type_a;
    *dt_end = i;
    c->i = i + 1; /* the `>` */
    return 1;
}

/* A needle's length and its rarest byte, kept by its address (needles are string
 * constants: working both out on every call was a fifth of the searches of an op line,
 * which looks for nine words in turn) */
#define NEEDLES 32
static struct {
    const char *needle;
    Py_ssize_t m, at;
} needle_info[NEEDLES];

/* Where `needle` first is in s[a:b], or -1 (a when empty): each candidate found by its
 * rarest byte (memchr), not tried at every offset */
Py_ssize_t fs_find(const char *s, Py_ssize_t a, Py_ssize_t b, const char *needle) {
    size_t slot = ((uintptr_t)needle >> 3) % NEEDLES;
    if (needle_info[slot].needle != needle) {
        Py_ssize_t len = (Py_ssize_t)strlen(needle);
        needle_info[slot].m = len;
        needle_info[slot].at = len ? fs_anchor_of(needle, len) : 0;
        needle_info[slot].needle = needle;
    }
    Py_ssize_t m = needle_info[slot].m;
    if (m == 0)
        return a <= b ? a : -1;
    if (b - a < m) /* (most calls: a value's element type or location, a few bytes) */
        return -1;
    /* memchr stops at the needle's rarest byte: at its first, `s` of `sdy.mesh @` stopped
     * at every `sdy.` of a sharding line */
    Py_ssize_t at = needle_info[slot].at;
    for (Py_ssize_t k = a; k + m <= b;) {
        const char *p = memchr(s + k + at, needle[at], (size_t)(b - m + 1 - k));
        if (p == NULL)
            break;
        k = p - s - at;
        if (memcmp(s + k, needle, (size_t)m) == 0)
            return k;
        k++;
    }
    return -1;
}

/* Whether a line found `plain` so far also has its sharding's bracket at `open` closed at
 * `stop` as the bracket matcher reads the whole line (quoted brackets inside the sharding:
 * the general reader decides): 1 yes, 0 no, -1 with a MemoryError set */
static int closed_at(int plain, const char *s, Py_ssize_t n, Py_ssize_t open, Py_ssize_t stop) {
    if (!plain)
        return 0;
    Py_ssize_t end = fs_match_end(PyUnicode_1BYTE_KIND, s, n, open);
    return end == -2 ? -1 : end == stop;
}

/* The line, args[0], of a reader called with `want` arguments (`usage` says which): NULL
 * with a TypeError for another count or a line that is not an ASCII str */
static PyObject *line_arg(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
                          const char *usage) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd argument%s", usage, want,
                     want == 1 ? "" : "s");
        return NULL;
    }
    if (!PyUnicode_Check(args[0]) || !PyUnicode_IS_ASCII(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s: expected an ASCII str", usage);
        return NULL;
    }
    return args[0];
}

/* A whole-line reader called from Python (`usage` names it): (name, op, start, stop,
 * shape, dtype) of the line args[0] when `read` finds its plain form, else None */
static PyObject *line_fields(PyObject *const *args, Py_ssize_t nargs, const char *usage,
                             int (*read)(const char *, Py_ssize_t, FsConstraint *,
                                         FsShape *)) {
    PyObject *line = line_arg(args, nargs, 1, usage);
    if (line == NULL)
        return NULL;
    const char *s = (const char *)PyUnicode_DATA(line);
    FsConstraint f;
    FsShape kept;
    int got = read(s, PyUnicode_GET_LENGTH(line), &f, &kept);
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *shape = fs_shape_tuple(&kept);
    fs_shape_clear(&kept);
    return Py_BuildValue("(NNnnNN)", fs_ascii_part(s, f.name_a, f.name_b),
                         fs_ascii_part(s, f.op_a, f.op_b), f.start, f.stop, shape,
                         fs_ascii_part(s, f.dt, f.dt_end));
}

const char fs_constraint_fields_doc[] =
    "constraint_fields(line) -> (name, op, start, stop, shape, dtype) or None\n\n"
    "A plain `sdy.sharding_constraint` / `sdy.reshard` line's fields (see\n"
    "meshdiag.ir.fields.constraint_fields_py); ASCII lines only.";

/* The plain constraint line s[0:n]: 1 with its spans in *f and its shape in *shape, 0 for
 * a line of another form, -1 with an error set */
int fs_read_constraint(const char *s, Py_ssize_t n, FsConstraint *f, FsShape *shape) {
    Cursor c = {s, 0, n};
    shape->tuple = NULL;
    while (c.i < c.n && (c.s[c.i] == ' ' || c.s[c.i] == '\t'))
        c.i++;
    f->name_a = c.i;
    f->name_b = take_name(&c, 0);
    if (f->name_b < 0 || !take(&c, " = sdy."))
        return 0;
    f->op_a = c.i;
    if (!take(&c, "sharding_constraint") && !take(&c, "reshard"))
        return 0;
    f->op_b = c.i;
    if (!take(&c, " ") || take_name(&c, 1) < 0 || !take(&c, " "))
        return 0;
    f->start = c.i;
    int checked;
    f->stop = take_closed_ref(&c, &checked);
    if (f->stop < 0 || !take(&c, " : tensor<"))
        return 0;
    int typed = take_type(&c, &f->dt, &f->dt_end, shape);
    if (typed <= 0)
        return typed;
    Py_ssize_t loc_a, loc_b;
    int plain = take_loc(&c, &loc_a, &loc_b);
    while (c.i < c.n && (c.s[c.i] == ' ' || c.s[c.i] == '\t'))
        c.i++;
    /* an annotation token after the sharding (in the type or the location): general */
    plain = plain && c.i == c.n && fs_find(c.s, 0, c.n, "computation") < 0 &&
            fs_find(c.s, f->dt, f->dt_end, "sharding") < 0 &&
            fs_find(c.s, loc_a, loc_b, "sharding") < 0;
    int closed = checked ? plain : closed_at(plain, c.s, c.n, f->start, f->stop);
    if (closed <= 0)
        fs_shape_clear(shape);
    return closed;
}

PyObject *fs_constraint_fields(PyObject *Py_UNUSED(self), PyObject *const *args,
                               Py_ssize_t nargs) {
    return line_fields(args, nargs, "constraint_fields(line)", fs_read_constraint);
}

const char fs_entry_fields_doc[] =
    "entry_fields(line, start, end) -> (name, start, stop, shape, dtype) or None\n\n"
    "A plain func.func signature entry in line[start:end] (see\n"
    "meshdiag.ir.fields.entry_fields_py); ASCII lines only.";

/* The plain signature entry in s[from:to] (s is n long; from and to within it): 1 with
 * its spans in *f and its shape in *shape, 0 for another form, -1 with an error set. With
 * `to` -1, the entry from `from` up to the `,` or `)` that follows it (and whitespace),
 * where f->next is then (a plain entry holds no comma or bracket of its group's own: its
 * span in its group ends there) */
int fs_read_entry(const char *s, Py_ssize_t n, Py_ssize_t from, Py_ssize_t to, FsEntry *f,
                  FsShape *shape) {
    int open_end = to < 0;
    Cursor c = {s, from, open_end ? n : to};
    shape->tuple = NULL;
    while (c.i < c.n && is_space(s[c.i]))
        c.i++;
    f->name_a = c.i;
    f->name_b = take_name(&c, 0);
    if (f->name_b < 0 || !take(&c, ": tensor<"))
        return 0;
    int typed = take_type(&c, &f->dt, &f->dt_end, shape);
    if (typed <= 0)
        return typed;
    Py_ssize_t a = -1, e = -1, tokens = 1; /* the annotation tokens its sharding holds */
    int checked = 1;
    if (take(&c, " {sdy.sharding = ")) {
        a = c.i;
        if (take(&c, "#sdy.sharding"))
            e = take_closed_ref(&c, &checked);
    } else if (take(&c, " {mhlo.sharding = \"")) { /* a GSPMD string, without escapes */
        a = c.i;
        tokens = 0;
        while (c.i < c.n && s[c.i] != '"' && s[c.i] != '\\')
            c.i++;
        if (c.i < c.n && s[c.i] == '"')
            e = c.i++;
    }
    Py_ssize_t loc_a = 0, loc_b = 0;
    int plain = e >= 0 && take(&c, "}") && take_loc(&c, &loc_a, &loc_b);
    if (plain) {
        while (c.i < c.n && is_space(s[c.i]))
            c.i++;
        /* its sharding holds `tokens` annotation words: past the `#sdy.sharding` read
         * (the word has no overlap with itself: no other occurrence starts before that
         * one ends), none (a count of them was a tenth of reading an entry) */
        f->next = c.i;
        plain = (open_end ? c.i < n && (s[c.i] == ',' || s[c.i] == ')') : c.i == c.n) &&
                fs_find(s, tokens ? a + 13 : a, e, "sharding") < 0 &&
                fs_find(s, f->dt, f->dt_end, "sharding") < 0 &&
                fs_find(s, loc_a, loc_b, "sharding") < 0;
    }
    /* from the `<` of `#sdy.sharding<` */
    int closed = tokens && !checked ? closed_at(plain, s, n, a + 13, e) : plain;
    if (closed <= 0) {
        fs_shape_clear(shape);
        return closed;
    }
    f->a = a;
    f->e = e;
    return 1;
}

PyObject *fs_entry_fields(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    PyObject *line = line_arg(args, nargs, 3, "entry_fields(line, start, end)");
    if (line == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    Py_ssize_t from = PyLong_AsSsize_t(args[1]), to = PyLong_AsSsize_t(args[2]);
    if ((from == -1 || to == -1) && PyErr_Occurred())
        return NULL;
    /* as re's pos/endpos: clamped to the string */
    if (from < 0)
        from = 0;
    if (to > n)
        to = n;
    if (to < from)
        Py_RETURN_NONE;
    const char *s = (const char *)PyUnicode_DATA(line);
    FsEntry f;
    FsShape kept;
    int got = fs_read_entry(s, n, from, to, &f, &kept);
    if (got <= 0)
        return got < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *shape = fs_shape_tuple(&kept);
    fs_shape_clear(&kept);
    return Py_BuildValue("(NnnNN)", fs_ascii_part(s, f.name_a, f.name_b), f.a, f.e, shape,
                         fs_ascii_part(s, f.dt, f.dt_end));
}

/* ---- plain op lines: fields.op_fields_py ------------------------------------------------
 * Not one regex: the steps `mlir._op` takes to read an op line's one annotation, each as
 * the Python it stands for does it (RESULT, OP_NAME, annotations_in, match_end,
 * op_result_types), so that a line read here is read there the same way. */

static const char *const NOT_PLAIN_OP[] = {
    "sdy.mesh @", "func.func", ": error:", ": warning:", "computation", "custom_call",
    "sdy.sharding_constraint ", "sdy.reshard ", " attributes ",
};

/* s[q:] starts with `lit` (q >= 0) */
static inline int at(const char *s, Py_ssize_t n, Py_ssize_t q, const char *lit) {
    Py_ssize_t m = (Py_ssize_t)strlen(lit);
    return q >= 0 && q + m <= n && memcmp(s + q, lit, (size_t)m) == 0;
}

/* text.annotations_in(s, from, n): how many tokens, and the span and kind of the first
 * (kind 1: `#sdy.sharding_per_value<`, 3: `mhlo.sharding = "`, 2: any other) */
static Py_ssize_t tokens_in(const char *s, Py_ssize_t n, Py_ssize_t from, Py_ssize_t *a,
                            Py_ssize_t *e, int *kind) {
    static const char *const SUFFIX[] = {"_per_value<", "<", " = \"", "=<"};
    Py_ssize_t found = 0;
    for (Py_ssize_t p = from; p + 8 <= n;) {
        const char *hit = memchr(s + p, 's', (size_t)(n - 8 + 1 - p));
        if (hit == NULL)
            break;
        p = hit - s;
        if (memcmp(s + p, "sharding", 8) != 0) {
            p++;
            continue;
        }
        int k = 0;
        while (k < 4 && !at(s, n, p + 8, SUFFIX[k]))
            k++;
        if (k == 4) {
            p++;
            continue;
        }
        Py_ssize_t end = p + 8 + (Py_ssize_t)strlen(SUFFIX[k]), start = -1;
        if (k <= 1) {
            if (p - 5 >= from && at(s, n, p - 5, "#sdy."))
                start = p - 5;
        } else if (k == 2) {
            const char *prefixes[] = {"mhlo.", "xla.sdy."};
            for (int j = 0; j < 2 && start < 0; j++) {
                Py_ssize_t q = p - (Py_ssize_t)strlen(prefixes[j]);
                if (q >= from && at(s, n, q, prefixes[j]) && (q == 0 || !is_word(s[q - 1])))
                    start = q;
            }
        } else {
            Py_ssize_t q = p - 4;
            if (q >= from && at(s, n, q, "out_") && (q == 0 || !is_word(s[q - 1])))
                start = q;
            else if (p == 0 || !is_word(s[p - 1]))
                start = p;
        }
        if (start >= 0) {
            if (found++ == 0) {
                *a = start;
                *e = end;
                *kind = k == 0 ? 1 : (k == 2 && s[start] == 'm') ? 3 : 2;
            }
        }
        p = end;
    }
    return found;
}

int fs_read_op(const char *s, Py_ssize_t n, FsOp *f, FsShape *shape) {
    shape->tuple = NULL;
    for (size_t k = 0; k < sizeof NOT_PLAIN_OP / sizeof NOT_PLAIN_OP[0]; k++)
        if (fs_find(s, 0, n, NOT_PLAIN_OP[k]) >= 0)
            return 0;
    /* RESULT: `^\s*(%[\w.$\-]+)(?::(\d+))?\s*=\s*`, one result */
    Cursor c = {s, 0, n};
    while (c.i < n && is_space(s[c.i]))
        c.i++;
    f->name_a = c.i;
    f->name_b = take_name(&c, 0);
    if (f->name_b < 0)
        return 0;
    while (c.i < n && is_space(s[c.i]))
        c.i++;
    if (!take(&c, "="))
        return 0;
    while (c.i < n && is_space(s[c.i]))
        c.i++;
    Py_ssize_t body = c.i;
    /* OP_NAME: `"([\w.]+)"` or `([a-z_]\w*\.[\w.]+)` */
    Py_ssize_t j = body;
    if (j < n && s[j] == '"') {
        f->op_a = ++j;
        while (j < n && (is_word(s[j]) || s[j] == '.'))
            j++;
        if (j == f->op_a || j >= n || s[j] != '"')
            return 0;
        f->op_b = j;
    } else {
        if (j >= n || !((s[j] >= 'a' && s[j] <= 'z') || s[j] == '_'))
            return 0;
        f->op_a = j++;
        while (j < n && is_word(s[j]))
            j++;
        if (j >= n || s[j] != '.')
            return 0;
        Py_ssize_t rest = ++j;
        while (j < n && (is_word(s[j]) || s[j] == '.'))
            j++;
        if (j == rest)
            return 0;
        f->op_b = j;
    }
    Py_ssize_t oplen = f->op_b - f->op_a;
    if ((oplen >= 19 && memcmp(s + f->op_b - 19, "sharding_constraint", 19) == 0) ||
        (oplen >= 7 && memcmp(s + f->op_b - 7, "reshard", 7) == 0))
        return 0;
    /* the one annotation token: a per-value sharding, not inside a string attribute, or
     * a GSPMD string without escapes */
    Py_ssize_t tok_a = -1, tok_e = -1;
    int kind = 0;
    if (tokens_in(s, n, body, &tok_a, &tok_e, &kind) != 1)
        return 0;
    if (kind == 1) {
        if (tok_a > body && s[tok_a - 1] == '"')
            return 0;
        Py_ssize_t stop = fs_match_end(PyUnicode_1BYTE_KIND, s, n, tok_e - 1);
        if (stop == -2)
            return -1;
        if (stop < 0)
            return 0;
        /* `#sdy\.sharding_per_value<\[<@[^<>]*>\]>`, all of it */
        Cursor v = {s, tok_e, stop};
        if (!take(&v, "[") || take_mesh_ref(&v) < 0 || !take(&v, "]>") || v.i != stop)
            return 0;
        f->start = tok_a;
        f->stop = stop;
    } else if (kind == 3) {
        Py_ssize_t q = tok_e;
        while (q < n && s[q] != '"') {
            if (s[q] == '\\')
                return 0;
            q++;
        }
        if (q >= n)
            return 0;
        f->start = tok_e;
        f->stop = q;
    } else {
        return 0;
    }
    /* op_result_types: after the last top-level ` : ` (and `->`) of the line without a
     * trailing ` loc(...)` (text.strip_loc) */
    Py_ssize_t m = n;
    while (m > 0 && is_space(s[m - 1]))
        m--;
    Py_ssize_t end = m, loc = -1;
    for (Py_ssize_t q = m - 5; q >= 0; q--)
        if (memcmp(s + q, " loc(", 5) == 0) {
            loc = q;
            break;
        }
    if (loc >= 0 && m > 0 && s[m - 1] == ')') {
        Py_ssize_t close = fs_match_end(PyUnicode_1BYTE_KIND, s, m, loc + 4);
        if (close == -2)
            return -1;
        if (close == m)
            end = loc;
    }
    Py_ssize_t colon, arrow;
    fs_top_colon(PyUnicode_1BYTE_KIND, s, end, body, &colon, &arrow);
    if (colon < 0)
        return 0;
    Py_ssize_t a = arrow >= 0 ? arrow : colon, b = end;
    while (a < b && is_space(s[a]))
        a++;
    while (b > a && is_space(s[b - 1]))
        b--;
    if (a < b && s[a] == '(') { /* a parenthesised list whole: its inside */
        Py_ssize_t close = fs_match_end(PyUnicode_1BYTE_KIND, s + a, b - a, 0);
        if (close == -2)
            return -1;
        if (close == b - a) {
            a++;
            b--;
        }
    }
    while (a < b && is_space(s[a])) /* the one type, stripped (split_top's part) */
        a++;
    while (b > a && is_space(s[b - 1]))
        b--;
    Cursor t = {s, a, b};
    if (!take(&t, "tensor<"))
        return 0;
    int typed = take_type(&t, &f->dt, &f->dt_end, shape);
    if (typed > 0 && t.i != b) {
        fs_shape_clear(shape);
        return 0;
    }
    return typed;
}

const char fs_op_fields_doc[] =
    "op_fields(line) -> (name, op, start, stop, shape, dtype) or None\n\n"
    "A plain op line's fields (see meshdiag.ir.fields.op_fields_py); ASCII lines only.";

PyObject *fs_op_fields(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    return line_fields(args, nargs, "op_fields(line)", fs_read_op);
}

/* ---- plain HLO instructions: fields.hlo_fields_py ----------------------------------------
 * The steps `hlo._instruction` takes to read an instruction's one sharding, each as the
 * Python it stands for does it (HLO_INSTR, the shape up to the first space, hlo_shapes,
 * HLO_OPCODE, hlo_sharding_braces). */

static inline int is_lower(char c) { return c >= 'a' && c <= 'z'; }

/* `%?[\w.\-]+\s*=\s*` from the cursor: the name's span, the cursor after the spaces; 0 when
 * the text has another form */
static int take_instr_name(Cursor *c, Py_ssize_t *a, Py_ssize_t *b) {
    Py_ssize_t j = c->i;
    *a = j;
    if (j < c->n && c->s[j] == '%')
        j++;
    Py_ssize_t first = j;
    while (j < c->n && (is_word(c->s[j]) || c->s[j] == '.' || c->s[j] == '-'))
        j++;
    if (j == first)
        return 0;
    *b = j;
    while (j < c->n && is_space(c->s[j]))
        j++;
    if (j >= c->n || c->s[j] != '=')
        return 0;
    j++;
    while (j < c->n && is_space(c->s[j]))
        j++;
    c->i = j;
    return 1;
}

int fs_read_hlo(const char *s, Py_ssize_t n, FsOp *f, FsShape *shape) {
    shape->tuple = NULL;
    shape->rank = -1; /* (always a tuple) */
    if (fs_find(s, 0, n, "xla.sdy.") >= 0)
        return 0;
    /* HLO_INSTR: `^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=\s*`, the ROOT group first */
    Cursor c = {s, 0, n};
    while (c.i < n && is_space(s[c.i]))
        c.i++;
    Py_ssize_t lead = c.i;
    int named = 0;
    if (take(&c, "ROOT") && c.i < n && is_space(s[c.i])) {
        while (c.i < n && is_space(s[c.i]))
            c.i++;
        named = take_instr_name(&c, &f->name_a, &f->name_b);
    }
    if (!named) { /* (`ROOT = ...`: the name is ROOT) */
        c.i = lead;
        if (!take_instr_name(&c, &f->name_a, &f->name_b))
            return 0;
    }
    Py_ssize_t rest = c.i;
    if (rest < n && s[rest] == '(')
        return 0; /* a tuple shape */
    Py_ssize_t sp = rest;
    while (sp < n && s[sp] != ' ')
        sp++;
    if (sp >= n || sp == 0)
        return 0;
    /* the shape s[rest:sp]: one `[`, and hlo_shapes' one array `([a-z][a-z0-9]*)\[([^\]]*)\]`
     * (its leftmost start) with static dims */
    Py_ssize_t q = -1;
    for (Py_ssize_t k = rest; k < sp; k++)
        if (s[k] == '[') {
            if (q >= 0)
                return 0;
            q = k;
        }
    if (q < 0)
        return 0;
    Py_ssize_t j = q;
    while (j > rest && (is_lower(s[j - 1]) || is_digit(s[j - 1])))
        j--;
    while (j < q && !is_lower(s[j]))
        j++;
    if (j == q)
        return 0;
    f->dt = j;
    f->dt_end = q;
    Py_ssize_t close = q + 1;
    while (close < sp && s[close] != ']')
        close++;
    if (close >= sp)
        return 0;
    PyObject *dims = PyList_New(0);
    if (dims == NULL)
        return -1;
    /* `d,d,...`: digits each, none empty, whitespace around any (`hlo_shapes` strips it) */
    Py_ssize_t last = close;
    while (last > q + 1 && is_space(s[last - 1]))
        last--;
    for (Py_ssize_t k = q + 1; k < last;) {
        while (k < last && is_space(s[k]))
            k++;
        Py_ssize_t a = k;
        while (k < last && is_digit(s[k]))
            k++;
        Py_ssize_t b = k;
        while (k < last && is_space(s[k]))
            k++;
        if (b == a || (k < last && s[k] != ',') || (k < last && k + 1 == last)) {
            Py_DECREF(dims);
            return 0;
        }
        PyObject *digits = PyUnicode_FromStringAndSize(s + a, b - a);
        PyObject *d = digits == NULL ? NULL : PyLong_FromUnicodeObject(digits, 10);
        Py_XDECREF(digits);
        if (d == NULL || PyList_Append(dims, d) < 0) {
            Py_XDECREF(d);
            Py_DECREF(dims);
            return -1;
        }
        Py_DECREF(d);
        if (k < last)
            k++; /* the comma */
    }
    /* HLO_OPCODE at the space: `\s*([\w\-]+)\(`, not a custom call */
    Py_ssize_t o = sp;
    while (o < n && is_space(s[o]))
        o++;
    f->op_a = o;
    while (o < n && (is_word(s[o]) || s[o] == '-'))
        o++;
    f->op_b = o;
    int plain = o > f->op_a && o < n && s[o] == '(' &&
                !(o - f->op_a == 11 && memcmp(s + f->op_a, "custom-call", 11) == 0);
    /* hlo_sharding_braces from the space: exactly one `sharding={`, not preceded by a word
     * character or `.` */
    Py_ssize_t brace = -1, found = 0;
    for (Py_ssize_t p = sp; plain && p + 10 <= n; p++) {
        const char *hit = memchr(s + p, 's', (size_t)(n - 10 + 1 - p));
        if (hit == NULL)
            break;
        p = hit - s;
        if (memcmp(s + p, "sharding={", 10) != 0)
            continue;
        char before = p > 0 ? s[p - 1] : ' ';
        if (p == 0 || !(is_word(before) || before == '.')) {
            found++;
            brace = p + 9;
        }
    }
    plain = plain && found == 1;
    /* its text: up to the first `}`, nothing nested or quoted before it */
    Py_ssize_t end = brace;
    if (plain) {
        end = brace + 1;
        while (end < n && s[end] != '}' && s[end] != '{' && s[end] != '"')
            end++;
        plain = end < n && s[end] == '}';
    }
    if (!plain) {
        Py_DECREF(dims);
        return 0;
    }
    f->start = brace;
    f->stop = end + 1;
    shape->tuple = PyList_AsTuple(dims);
    Py_DECREF(dims);
    return shape->tuple == NULL ? -1 : 1;
}

const char fs_hlo_fields_doc[] =
    "hlo_fields(line) -> (name, opcode, start, stop, shape, dtype) or None\n\n"
    "A plain HLO instruction's fields (see meshdiag.ir.fields.hlo_fields_py); ASCII lines\n"
    "only.";

PyObject *fs_hlo_fields(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    return line_fields(args, nargs, "hlo_fields(line)", fs_read_hlo);
}
