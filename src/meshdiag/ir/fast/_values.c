/* Values of plain annotated lines made in C, from a prototype of their sharding.
 *
 * A streamed file of new lines (one program's every op, each with its own names and
 * shapes) is mostly plain constraint lines, plain op lines and plain signature entries
 * (fields.py). Two such values with the same sharding text in the same mesh state differ
 * only in their name, line, column, shape, element type, kind and op; the scanner keeps
 * one prototype Value per sharding text and state (`ScanCache.protos`, left by the general
 * reader the first time). Each value here is a copy of its prototype with those seven fields set, as
 * `model.from_proto` (the Python twin) makes it: the line never reaches Python.
 *
 * Callers: the candidate walker (`_fastscan.c` scan_plain) for constraint and op lines, and
 * `entry_values` for the entries of a signature line. ASCII text only; anything else,
 * and every sharding without a prototype, is left to the general reader.
 */
#include "_fastscan.h"

#include <string.h>
#include <structmember.h>

const char *const FS_FIELD_NAMES[FV_N] = {
    "name",        "line",  "column",    "text",     "notation", "kind", "op", "shape",
    "local_shape", "dtype", "mesh_name", "sharding", "hlo"};
PyObject *FS_FIELDS[FV_N];
PyObject *FS_PARTITIONED, *FS_PROTOS;
/* the roles of plain lines' values */
static PyObject *ROLE_CONSTRAINT, *ROLE_RESHARD, *ROLE_ARG, *ROLE_OP, *OP_CONSTRAINT, *OP_RESHARD;

int fs_values_init(void) {
    for (int i = 0; i < FV_N; i++)
        if ((FS_FIELDS[i] = PyUnicode_InternFromString(FS_FIELD_NAMES[i])) == NULL)
            return -1;
    struct {
        PyObject **at;
        const char *text;
    } names[] = {
        {&FS_PARTITIONED, "partitioned"},
        {&FS_PROTOS, "protos"},
        {&ROLE_CONSTRAINT, "constraint"},
        {&ROLE_RESHARD, "reshard"},
        {&ROLE_ARG, "arg"},
        {&ROLE_OP, "op"},
        {&OP_CONSTRAINT, "sdy.sharding_constraint"},
        {&OP_RESHARD, "sdy.reshard"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if ((*names[k].at = PyUnicode_InternFromString(names[k].text)) == NULL)
            return -1;
    return 0;
}

/* -- pieces that repeat, kept --------------------------------------------------------------
 * A value's name (`%arg3`, `%12`) and its column repeat from module to module: every
 * function numbers its arguments and results from 0, and a signature's columns follow its
 * layout (the 60 MB bench file's 278,658 values have 801 distinct names; of their columns
 * past 256, Python's own small ints, 140,494 have 2,713 distinct values), and a tensor's
 * dims repeat within a module. The last str or int made for each is kept in a small table
 * by its content (a collision replaces it): a value takes a reference to it instead of
 * allocating one, and frees none later. Equal content, so no caller can tell. With 1,024
 * slots the 2,713 columns alone collided: 4,096 ran 0.8% fewer instructions over a 10 MB
 * slice of the cold bench file, with fewer simulated cache misses (cachegrind); 16,384
 * 0.2% fewer again, for four times the tables. */
#define PIECES 4096
static struct {
    uint64_t first, last; /* the str's first and last words, as below */
    PyObject *o;
} piece_str[PIECES];
static struct {
    long long v;
    PyObject *o;
} piece_int[PIECES];

PyObject *fs_str_piece(const char *s, Py_ssize_t a, Py_ssize_t b) {
    /* the slot: the length and the first and last 8 bytes, a word each (names are short:
     * hashing them byte by byte was most of the look-up). Up to 16 bytes the two words are
     * the whole text: equal words and length are an equal str, with no memcmp (a call for
     * a few bytes, a tenth of a big file's scan in the pieces' look-ups) */
    Py_ssize_t n = b - a;
    uint64_t first = 0, last = 0;
    memcpy(&first, s + a, (size_t)(n < 8 ? n : 8));
    if (n > 8)
        memcpy(&last, s + b - (n < 16 ? n - 8 : 8), (size_t)(n < 16 ? n - 8 : 8));
    uint64_t h = (first * 0x9E3779B97F4A7C15ull) ^ (last * 0xC2B2AE3D27D4EB4Full) ^ (uint64_t)n;
    size_t k = (size_t)((h * 0xff51afd7ed558ccdull) >> 32) % PIECES;
    PyObject *o = piece_str[k].o;
    if (o != NULL && PyUnicode_GET_LENGTH(o) == n && piece_str[k].first == first &&
        piece_str[k].last == last &&
        (n <= 16 || memcmp(PyUnicode_1BYTE_DATA(o) + 8, s + a + 8, (size_t)(n - 16)) == 0))
        return Py_NewRef(o);
    PyObject *t = fs_ascii_part(s, a, b);
    if (t != NULL) {
        Py_XSETREF(piece_str[k].o, Py_NewRef(t));
        piece_str[k].first = first;
        piece_str[k].last = last;
    }
    return t;
}

PyObject *fs_int_piece(long long v) {
    if (v >= -5 && v <= 256) /* Python keeps these itself */
        return PyLong_FromLongLong(v);
    size_t k = (size_t)(((unsigned long long)v * 0x9E3779B97F4A7C15ull) >> 32) % PIECES;
    if (piece_int[k].o != NULL && piece_int[k].v == v)
        return Py_NewRef(piece_int[k].o);
    PyObject *o = PyLong_FromLongLong(v);
    if (o != NULL) {
        Py_XSETREF(piece_int[k].o, Py_NewRef(o));
        piece_int[k].v = v;
    }
    return o;
}

/* Where each field's slot is in the Value class last asked about (its member
 * descriptors' offsets), found once per class: FV_N offsets, and the class (kept) */
static PyTypeObject *slots_of;
static Py_ssize_t slot_at[FV_N];

/* Learn the slots of `t`: 0, 1 when it does not have them all, -1 with an error set */
static int learn_slots(PyTypeObject *t) {
    Py_ssize_t at[FV_N];
    for (int i = 0; i < FV_N; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)t, FS_FIELDS[i]);
        if (d == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            return 1;
        }
        int slot = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                   ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        at[i] = slot ? ((PyMemberDescrObject *)d)->d_member->offset : -1;
        Py_DECREF(d);
        if (!slot)
            return 1;
    }
    Py_XSETREF(slots_of, (PyTypeObject *)Py_NewRef(t));
    memcpy(slot_at, at, sizeof at);
    return 0;
}

#define SLOT(v, i) (*(PyObject **)((char *)(v) + slot_at[i]))

int fs_fields_kept(PyObject *v, PyObject **out, FsShape *kept) {
    kept->tuple = NULL;
    kept->rank = -1;
    if (Py_TYPE(v) == &FsValueType) { /* the native class: its fields at hand */
        FsValue *nv = (FsValue *)v;
        int unset = 0;
        for (int i = 0; i < FV_N; i++)
            unset |= (out[i] = nv->f[i]) == NULL && !(i == FV_SHAPE && nv->kept_rank);
        if (nv->kept_rank) {
            kept->rank = nv->kept_rank - 1;
            memcpy(kept->dims, nv->dims, sizeof kept->dims);
        }
        return unset;
    }
    if (Py_TYPE(v) != slots_of) {
        int got = learn_slots(Py_TYPE(v));
        if (got != 0)
            return got;
    }
    for (int i = 0; i < FV_N; i++)
        if ((out[i] = SLOT(v, i)) == NULL)
            return 1;
    return 0;
}

int fs_fields(PyObject *v, PyObject **out) {
    if (Py_TYPE(v) == &FsValueType && ((FsValue *)v)->kept_rank &&
        fs_value_shape((FsValue *)v) == NULL)
        return -1;
    FsShape none; /* (no shape is kept now) */
    return fs_fields_kept(v, out, &none);
}

/* The seven fields a value made from a prototype has of its own, set in `f` (the shape
 * NULL when kept as numbers) */
static inline void own_fields(PyObject **f, PyObject *name, PyObject *line, PyObject *column,
                              PyObject *shape, PyObject *dtype, PyObject *kind, PyObject *op) {
    f[FV_NAME] = name;
    f[FV_LINE] = line;
    f[FV_COLUMN] = column;
    f[FV_SHAPE] = shape;
    f[FV_DTYPE] = dtype;
    f[FV_KIND] = kind;
    f[FV_OP] = op;
}

/* A new object of the prototype's class whose fields are the prototype's with the seven
 * given (borrowed) ones set, as `model.from_proto` makes it; NULL with an error set. A
 * native value keeps a shape read as numbers so (`FsShape`); any other gets its tuple. */
static PyObject *from_proto(PyObject *proto, PyObject *name, PyObject *line, PyObject *column,
                            const FsShape *shape, PyObject *dtype, PyObject *kind,
                            PyObject *op) {
    PyTypeObject *cls = Py_TYPE(proto);
    PyObject *f[FV_N];
    int got = fs_fields(proto, f); /* (a native prototype's kept shape made: it is replaced) */
    if (got != 0) {
        if (got > 0)
            PyErr_SetString(PyExc_TypeError, "a prototype must be a Value");
        return NULL;
    }
    if (cls == &FsValueType) {
        /* the native class: its fields copied at once, and no generic zeroed allocation
         * (every field is set here) */
        FsValue *v = PyObject_Malloc(sizeof(FsValue));
        if (v == NULL)
            return PyErr_NoMemory();
        PyObject_Init((PyObject *)v, &FsValueType);
        memcpy(v->f, f, sizeof v->f);
        own_fields(v->f, name, line, column, shape->tuple, dtype, kind, op);
        v->kept_rank = shape->rank < 0 ? 0 : shape->rank + 1;
        if (v->kept_rank)
            memcpy(v->dims, shape->dims, sizeof v->dims);
        for (int i = 0; i < FV_N; i++)
            Py_XINCREF(v->f[i]);
        return (PyObject *)v;
    }
    PyObject *tuple = fs_shape_tuple(shape);
    if (tuple == NULL)
        return NULL;
    own_fields(f, name, line, column, tuple, dtype, kind, op);
    PyObject *v = cls->tp_alloc(cls, 0);
    if (v == NULL) {
        Py_DECREF(tuple);
        return NULL;
    }
    for (int i = 0; i < FV_N; i++)
        SLOT(v, i) = Py_NewRef(f[i]);
    Py_DECREF(tuple);
    /* out of the garbage collector's lists: a value holds strs, ints, tuples of ints and
     * parsed shardings, none of which refers back to it, so it is never in a cycle, and
     * linking a million of them into the list and out of it again cost more than the
     * collections themselves */
    if (PyType_IS_GC(cls)) /* (the native Value is not one of the collector's) */
        PyObject_GC_UnTrack(v);
    return v;
}

/* The value made from `proto` (borrowed) for the text `s`: its name s[name_a:name_b], its
 * element type s[dt:dt_end] (each a kept piece, `fs_str_piece`: a file's values are mostly
 * of one or two types), its 1-based `column`, at `line`, with `shape`, `kind` and `op`
 * (borrowed), appended to the columns: 1, or -1 with an error set */
static int append_made(PyObject *proto, const char *s, Py_ssize_t name_a, Py_ssize_t name_b,
                       Py_ssize_t dt, Py_ssize_t dt_end, Py_ssize_t column, PyObject *line,
                       const FsShape *shape, PyObject *kind, PyObject *op, PyObject *lines_out,
                       PyObject *items_out);

/* The prototype (borrowed) of the sharding s[a:b] in `protos`; NULL without an error
 * when there is none. `cache` (or NULL): the last few found in one call, by their text
 * (which stays in the caller's buffer for the call): a module's lines name a few shardings
 * over and over, and making each one's text a str to look it up was a tenth of reading a
 * plain line. Nothing runs Python code during a call, so `protos` does not change. */
static PyObject *proto_of(PyObject *protos, const char *s, Py_ssize_t a, Py_ssize_t b,
                          FsProtoCache *cache) {
    if (cache != NULL) {
        for (int k = 0; k < FS_PROTO_CACHE; k++) {
            if (cache->proto[k] != NULL && cache->len[k] == b - a &&
                memcmp(cache->text[k], s + a, (size_t)(b - a)) == 0)
                return cache->proto[k];
        }
    }
    PyObject *text = fs_ascii_part(s, a, b);
    if (text == NULL)
        return NULL;
    PyObject *proto = PyDict_GetItemWithError(protos, text);
    Py_DECREF(text);
    if (proto != NULL && cache != NULL) {
        int k = cache->next;
        cache->next = (k + 1) % FS_PROTO_CACHE;
        Py_XSETREF(cache->proto[k], Py_NewRef(proto));
        cache->text[k] = s + a;
        cache->len[k] = b - a;
    }
    return proto;
}

void fs_proto_cache_clear(FsProtoCache *cache) {
    for (int k = 0; k < FS_PROTO_CACHE; k++)
        Py_CLEAR(cache->proto[k]);
}

/* Append `v` (stolen) at `line` (borrowed) to the value columns: 0, or -1 with an error */
static int append(PyObject *lines_out, PyObject *items_out, PyObject *line, PyObject *v) {
    if (v == NULL)
        return -1;
    int failed = PyList_Append(lines_out, line) < 0 || PyList_Append(items_out, v) < 0;
    Py_DECREF(v);
    return failed ? -1 : 0;
}

int fs_plain_line(const char *s, Py_ssize_t n, Py_ssize_t lineno, PyObject *protos,
                  PyObject *lines_out, PyObject *items_out, FsProtoCache *cache) {
    if (!fs_all_ascii(s, n))
        return 0;
    FsConstraint f;
    FsShape shape;
    PyObject *kind, *op;
    int got = fs_read_constraint(s, n, &f, &shape);
    if (got > 0) {
        /* a line `mlir.handle` reads as a mesh op or a function first (a quoted axis name
         * may say one; the op reader refuses such lines itself) */
        if (fs_find(s, 0, n, "sdy.mesh @") >= 0 || fs_find(s, 0, n, "func.func") >= 0) {
            fs_shape_clear(&shape);
            return 0;
        }
        int reshard = f.op_b - f.op_a == (Py_ssize_t)strlen("reshard");
        kind = Py_NewRef(reshard ? ROLE_RESHARD : ROLE_CONSTRAINT);
        op = Py_NewRef(reshard ? OP_RESHARD : OP_CONSTRAINT);
    } else if (got == 0) {
        got = fs_read_op(s, n, &f, &shape);
        if (got <= 0)
            return got;
        kind = Py_NewRef(ROLE_OP);
        op = fs_str_piece(s, f.op_a, f.op_b);
    } else {
        return -1;
    }
    PyObject *proto = op == NULL ? NULL : proto_of(protos, s, f.start, f.stop, cache);
    if (proto == NULL) {
        fs_shape_clear(&shape);
        Py_DECREF(kind);
        Py_XDECREF(op);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *line = PyLong_FromSsize_t(lineno);
    int result = line == NULL ? -1
                              : append_made(proto, s, f.name_a, f.name_b, f.dt, f.dt_end,
                                            f.start + 1, line, &shape, kind, op, lines_out,
                                            items_out);
    Py_XDECREF(line);
    fs_shape_clear(&shape);
    Py_DECREF(kind);
    Py_DECREF(op);
    return result;
}

const char fs_plain_line_doc[] =
    "plain_line(raw, lineno, protos, lines_out, items_out) -> bool\n\n"
    "The plain constraint or op line `raw` (bytes, without its newline) as the value made\n"
    "from its sharding's prototype in `protos`, appended to the columns: what the walker\n"
    "(scan_plain) does with such a line. False, nothing appended, for any other line.\n"
    "See lines.plain_line_py.";

PyObject *fs_plain_line_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "plain_line(raw, lineno, protos, lines_out, items_out)");
        return NULL;
    }
    PyObject *raw = args[0], *protos = args[2], *lines_out = args[3], *items_out = args[4];
    if (!PyBytes_Check(raw) || !PyDict_Check(protos) || !PyList_Check(lines_out) ||
        !PyList_Check(items_out)) {
        PyErr_SetString(PyExc_TypeError, "plain_line: expected (bytes, int, dict, list, list)");
        return NULL;
    }
    Py_ssize_t lineno = PyLong_AsSsize_t(args[1]);
    if (lineno == -1 && PyErr_Occurred())
        return NULL;
    int got = fs_plain_line(PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw), lineno, protos,
                            lines_out, items_out, NULL);
    if (got < 0)
        return NULL;
    return PyBool_FromLong(got);
}

/* The plain signature entry s[a:e] as a value appended to the columns (the line ASCII):
 * 1, or 0 when it is not plain or its sharding has no prototype in `protos` (nothing done),
 * -1 with an error set. `cache`: the call's prototypes found last. */
int fs_entry_value(const char *s, Py_ssize_t n, Py_ssize_t a, Py_ssize_t e, PyObject *lineno,
                   PyObject *protos, PyObject *lines_out, PyObject *items_out,
                   FsProtoCache *cache, Py_ssize_t *next) {
    FsEntry f;
    FsShape shape;
    int got = fs_read_entry(s, n, a, e, &f, &shape);
    if (got <= 0)
        return got;
    if (next != NULL)
        *next = f.next;
    PyObject *proto = proto_of(protos, s, f.a, f.e, cache);
    if (proto == NULL) {
        fs_shape_clear(&shape);
        return PyErr_Occurred() ? -1 : 0;
    }
    int result = append_made(proto, s, f.name_a, f.name_b, f.dt, f.dt_end, f.a + 1, lineno,
                             &shape, ROLE_ARG, Py_None, lines_out, items_out);
    fs_shape_clear(&shape);
    return result;
}

static int append_made(PyObject *proto, const char *s, Py_ssize_t name_a, Py_ssize_t name_b,
                       Py_ssize_t dt, Py_ssize_t dt_end, Py_ssize_t column, PyObject *line,
                       const FsShape *shape, PyObject *kind, PyObject *op, PyObject *lines_out,
                       PyObject *items_out) {
    Py_INCREF(proto); /* (borrowed from the caller's dict: kept alive whatever appending does) */
    PyObject *name = fs_str_piece(s, name_a, name_b);
    PyObject *dtype = fs_str_piece(s, dt, dt_end);
    PyObject *col = fs_int_piece(column);
    int result = -1;
    if (name != NULL && dtype != NULL && col != NULL) {
        PyObject *v = from_proto(proto, name, line, col, shape, dtype, kind, op);
        result = append(lines_out, items_out, line, v) < 0 ? -1 : 1;
    }
    Py_XDECREF(name);
    Py_XDECREF(dtype);
    Py_XDECREF(col);
    Py_DECREF(proto);
    return result;
}

const char fs_entry_values_doc[] =
    "entry_values(line, spans, k, lineno, protos, lines_out, items_out) -> int\n\n"
    "The plain signature entries line[a:e] of spans[k:] as values appended to the columns,\n"
    "up to the first one that is not plain or whose sharding has no prototype in `protos`;\n"
    "returns that entry's index (len(spans) when none). See fields.entry_values_py.";

PyObject *fs_entry_values(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "entry_values(line, spans, k, lineno, protos, lines_out, items_out)");
        return NULL;
    }
    PyObject *line = args[0], *spans = args[1], *protos = args[4];
    PyObject *lines_out = args[5], *items_out = args[6];
    if (!PyUnicode_Check(line) || !PyList_Check(spans) || !PyDict_Check(protos) ||
        !PyList_Check(lines_out) || !PyList_Check(items_out)) {
        PyErr_SetString(PyExc_TypeError,
                        "entry_values: expected (str, list, int, int, dict, list, list)");
        return NULL;
    }
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k < 0)
        k = 0;
    if (!PyUnicode_IS_ASCII(line)) /* the twin reads it */
        return PyLong_FromSsize_t(k);
    PyObject *lineno = args[3];
    if (!PyLong_Check(lineno)) {
        PyErr_SetString(PyExc_TypeError, "entry_values: lineno must be int");
        return NULL;
    }
    const char *s = (const char *)PyUnicode_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    FsProtoCache cache = {0};
    PyObject *result = NULL;
    for (; k < PyList_GET_SIZE(spans); k++) {
        PyObject *span = PyList_GET_ITEM(spans, k);
        Py_ssize_t a, e;
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2) {
            PyErr_SetString(PyExc_TypeError, "entry_values: spans must be (start, end) pairs");
            goto done;
        }
        a = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        e = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        if ((a == -1 || e == -1) && PyErr_Occurred())
            goto done;
        if (a < 0) /* as re's pos/endpos: clamped to the string */
            a = 0;
        if (e > n)
            e = n;
        if (e < a)
            break;
        int got =
            fs_entry_value(s, n, a, e, lineno, protos, lines_out, items_out, &cache, NULL);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
    }
    result = PyLong_FromSsize_t(k);
done:
    fs_proto_cache_clear(&cache);
    return result;
}
