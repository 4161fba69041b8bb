/* A module's values by device layout, in C: the twin of
 * `pipeline.dump_summary.module_rows_py`.
 *
 * `meshdiag inspect DIR` sums every module of a dump by the layouts its values have. Each
 * module's rows start from its column entries: each distinct entry once, with how many
 * times the module holds it, each of its values counted under its layout key. A cold dump
 * holds thousands of modules no module before held, and walking their entries in Python
 * was about a microsecond a value. The layout key and spelling of a value (`key_of`) and
 * what a row is drawn with (`draw_of`) stay the caller's: they are asked once per distinct
 * (text, notation, parsed objects) and once per row.
 */
#include "_fastscan.h"

/* The distinct entries of a call, in order of first occurrence: each one's first index
 * and how many times the module holds it, found by address (`FsPtrMap` -> its place). */
typedef struct {
    Py_ssize_t first, times;
} Entry;

typedef struct {
    FsPtrMap at;
    Entry *entry;
    Py_ssize_t len, cap;
} Firsts;

/* Count the entry `p` at index `i`: 0, or -1 with a MemoryError set */
static int firsts_add(Firsts *f, void *p, Py_ssize_t i) {
    Py_ssize_t k;
    int was = fs_ptrmap_put(&f->at, p, f->len, &k);
    if (was != 0) {
        if (was > 0)
            f->entry[k].times++;
        return was < 0 ? -1 : 0;
    }
    if (f->len == f->cap) {
        Py_ssize_t cap = f->cap ? 2 * f->cap : 64;
        Entry *entry = PyMem_Realloc(f->entry, (size_t)cap * sizeof(Entry));
        if (entry == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        f->entry = entry;
        f->cap = cap;
    }
    f->entry[f->len++] = (Entry){i, 1};
    return 0;
}

static void firsts_free(Firsts *f) {
    fs_ptrmap_free(&f->at);
    PyMem_Free(f->entry);
}

/* d[key] = d.get(key, 0) + times: 0, or -1 with an error set */
static int add_count(PyObject *d, PyObject *key, PyObject *times) {
    PyObject *old = PyDict_GetItemWithError(d, key); /* borrowed */
    if (old == NULL && PyErr_Occurred())
        return -1;
    PyObject *sum = old == NULL ? Py_NewRef(times) : PyNumber_Add(old, times);
    if (sum == NULL)
        return -1;
    int failed = PyDict_SetItem(d, key, sum) < 0;
    Py_DECREF(sum);
    return failed ? -1 : 0;
}

/* The (layout key, spelling) of the value with fields `f`, from `texts` (the call's memo
 * by (text, notation, id(sharding), id(hlo)): the value's parsed objects stay alive for the
 * call, so their identities name them) or `key_of(v)`: a new reference, NULL with an error
 * set */
static PyObject *key_and_spelling(PyObject *v, PyObject *const *f, PyObject *texts,
                                  PyObject *key_of) {
    PyObject *sid = PyLong_FromVoidPtr(f[FV_SHARDING]);
    PyObject *hid = sid == NULL ? NULL : PyLong_FromVoidPtr(f[FV_HLO]);
    PyObject *of = hid == NULL ? NULL : PyTuple_Pack(4, f[FV_TEXT], f[FV_NOTATION], sid, hid);
    Py_XDECREF(sid);
    Py_XDECREF(hid);
    if (of == NULL)
        return NULL;
    PyObject *got = PyDict_GetItemWithError(texts, of); /* borrowed */
    if (got != NULL) {
        Py_DECREF(of);
        return Py_NewRef(got);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(of);
        return NULL;
    }
    got = PyObject_CallOneArg(key_of, v);
    if (got != NULL && (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2)) {
        PyErr_SetString(PyExc_TypeError, "module_rows: key_of must give (key, spelling)");
        Py_CLEAR(got);
    }
    if (got != NULL && PyDict_SetItem(texts, of, got) < 0)
        Py_CLEAR(got);
    Py_DECREF(of);
    return got;
}

/* What the rows of one call share */
typedef struct {
    PyObject *out;     /* layout key -> row */
    PyObject *one_off; /* (line, name, key) of values of their own counted */
    PyObject *texts;   /* the (layout key, spelling) memo */
    PyObject *key_of, *draw_of;
} Rows;

/* The row of layout key `k`, made when new ([0, {}, {}, {}, (name, i), None]): borrowed,
 * NULL with an error set */
static PyObject *row_of(Rows *r, PyObject *k, PyObject *name, Py_ssize_t i) {
    PyObject *row = PyDict_GetItemWithError(r->out, k);
    if (row != NULL || PyErr_Occurred())
        return row;
    PyObject *index = PyLong_FromSsize_t(i);
    PyObject *first = index == NULL ? NULL : PyTuple_Pack(2, name, index);
    Py_XDECREF(index);
    if (first == NULL)
        return NULL;
    row = Py_BuildValue("[iNNNNO]", 0, PyDict_New(), PyDict_New(), PyDict_New(), first, Py_None);
    if (row == NULL)
        return NULL;
    int failed = PyDict_SetItem(r->out, k, row) < 0;
    Py_DECREF(row); /* (the dict holds it) */
    return failed ? NULL : row;
}

/* Count the value `v` of the entry at index `i` (held `times` times; `own`: a value of
 * its own line, at `line`) into its row; `counted` holds the (name, key) pairs of the
 * entry's values counted so far: 0, or -1 with an error set */
static int count_value(Rows *r, PyObject *v, Py_ssize_t i, PyObject *times, int own,
                       PyObject *line, PyObject *counted) {
    PyObject *f[FV_N];
    int got = fs_fields(v, f);
    if (got != 0) {
        if (got > 0)
            PyErr_SetString(PyExc_TypeError, "module_rows: a value with an unset field");
        return -1;
    }
    PyObject *ks = key_and_spelling(v, f, r->texts, r->key_of);
    if (ks == NULL)
        return -1;
    if (fs_fields(v, f) != 0) { /* (read again: `key_of` is Python code, it may set them) */
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "module_rows: a value with an unset field");
        Py_DECREF(ks);
        return -1;
    }
    PyObject *k = PyTuple_GET_ITEM(ks, 0), *name = f[FV_NAME];
    int result = -1;
    PyObject *row = row_of(r, k, name, i);
    if (row == NULL || add_count(PyList_GET_ITEM(row, 1), PyTuple_GET_ITEM(ks, 1), times) < 0)
        goto done;
    /* a value is counted once: a value of its own once per (line, name, key) in the module,
     * a shared line's once per (name, key) in its entry */
    PyObject *once = own ? PyTuple_Pack(3, line, name, k) : PyTuple_Pack(2, name, k);
    if (once == NULL)
        goto done;
    PyObject *set = own ? r->one_off : counted;
    int seen = PySet_Contains(set, once);
    if (seen == 0 && PySet_Add(set, once) < 0)
        seen = -1;
    Py_DECREF(once);
    if (seen != 0) {
        result = seen < 0 ? -1 : 0;
        goto done;
    }
    PyObject *n = PyNumber_Add(PyList_GET_ITEM(row, 0), times);
    if (n == NULL)
        goto done;
    PyList_SetItem(row, 0, n); /* steals `n` */
    PyObject *shape = f[FV_SHAPE], *local = f[FV_LOCAL_SHAPE];
    if (shape != Py_None) {
        if (add_count(PyList_GET_ITEM(row, 2), shape, times) < 0)
            goto done;
        if (PyList_GET_ITEM(row, 5) == Py_None) {
            PyObject *draw = PyObject_CallOneArg(r->draw_of, v);
            if (draw == NULL)
                goto done;
            PyList_SetItem(row, 5, draw); /* steals `draw` (None again: asked again) */
        }
    } else if (local != Py_None && add_count(PyList_GET_ITEM(row, 3), local, times) < 0) {
        goto done;
    }
    result = 0;
done:
    Py_DECREF(ks);
    return result;
}

const char fs_module_rows_doc[] =
    "module_rows(items, lines, partitioned, value_type, key_of, draw_of) -> dict\n\n"
    "pipeline.dump_summary.module_rows_py on the column entries `items` at `lines`: layout\n"
    "key -> [values, {spelling: count}, {global shape: count}, {local shape: count}, (first\n"
    "name, its row), draw_of(value) of the first value with a global shape it is not None\n"
    "for]. A `value_type` entry is one value of its own; any other is a shared line's, its\n"
    "values its `partitioned` when `partitioned`, else its `protos`. key_of(value) ->\n"
    "(layout key, spelling).";

PyObject *fs_module_rows(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        !PyType_Check(args[3]) || !PyCallable_Check(args[4]) || !PyCallable_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "module_rows(items: list, lines: list, partitioned, "
                                         "value_type: type, key_of, draw_of)");
        return NULL;
    }
    PyObject *items = args[0], *lines = args[1];
    if (PyList_GET_SIZE(lines) != PyList_GET_SIZE(items)) {
        PyErr_SetString(PyExc_ValueError, "module_rows: as many lines as items");
        return NULL;
    }
    int part = PyObject_IsTrue(args[2]);
    if (part < 0)
        return NULL;
    PyObject *attr = part ? FS_PARTITIONED : FS_PROTOS;
    PyTypeObject *type = (PyTypeObject *)args[3];
    Firsts firsts = {0};
    Rows r = {PyDict_New(), PySet_New(NULL), PyDict_New(), args[4], args[5]};
    PyObject *result = NULL;
    if (r.out == NULL || r.one_off == NULL || r.texts == NULL)
        goto done;
    /* (the lists are walked while Python code runs, `key_of` and `draw_of`: held, and read
     * by index with their lengths checked each time) */
    Py_INCREF(items);
    Py_INCREF(lines);
    if (fs_ptrmap_reserve(&firsts.at, PyList_GET_SIZE(items)) < 0)
        goto release;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++)
        if (firsts_add(&firsts, PyList_GET_ITEM(items, i), i) < 0)
            goto release;
    for (Py_ssize_t e = 0; e < firsts.len; e++) {
        Py_ssize_t i = firsts.entry[e].first;
        if (i >= PyList_GET_SIZE(items) || i >= PyList_GET_SIZE(lines)) {
            PyErr_SetString(PyExc_RuntimeError, "module_rows: the columns changed");
            goto release;
        }
        PyObject *it = Py_NewRef(PyList_GET_ITEM(items, i));
        PyObject *times = PyLong_FromSsize_t(firsts.entry[e].times);
        int failed = times == NULL;
        if (!failed && Py_TYPE(it) == type) {
            PyObject *line = Py_NewRef(PyList_GET_ITEM(lines, i));
            failed = count_value(&r, it, i, times, 1, line, NULL) < 0;
            Py_DECREF(line);
        } else if (!failed) {
            PyObject *vals = PyObject_GetAttr(it, attr);
            PyObject *fast = vals == NULL ? NULL : PySequence_Fast(vals, "values must be a sequence");
            PyObject *counted = fast == NULL ? NULL : PySet_New(NULL);
            failed = counted == NULL;
            for (Py_ssize_t k = 0; !failed && k < PySequence_Fast_GET_SIZE(fast); k++)
                failed = count_value(&r, PySequence_Fast_GET_ITEM(fast, k), i, times, 0, NULL,
                                     counted) < 0;
            Py_XDECREF(counted);
            Py_XDECREF(fast);
            Py_XDECREF(vals);
        }
        Py_XDECREF(times);
        Py_DECREF(it);
        if (failed)
            goto release;
    }
    result = Py_NewRef(r.out);
release:
    Py_DECREF(items);
    Py_DECREF(lines);
done:
    firsts_free(&firsts);
    Py_XDECREF(r.out);
    Py_XDECREF(r.one_off);
    Py_XDECREF(r.texts);
    return result;
}
