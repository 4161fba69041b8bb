/* A module's values grouped by their own sharding text, in C: the twin of
 * `pipeline.module_summary.text_groups_py`.
 *
 * What `meshdiag inspect FILE` shows of a module starts from its values grouped by the text
 * of their sharding: how many have each text, where the first few are, and the distinct
 * values (by identity) a picture is drawn from. A big file of new lines holds a million
 * values of their own (`Value` entries): grouping them in Python cost about a third of a
 * microsecond each. Here a Shardy value's text is its own text; any other value's (GSPMD, a
 * per-value list) comes from `own_text(value)`, and a shared line's values (any other
 * entry) from `rows(entry)`: (text, name, column, value) each, both the caller's.
 */
#include "_fastscan.h"

static PyObject *SDY, *PER_VALUE;

int fs_groups_init(void) {
    SDY = PyUnicode_InternFromString("sdy");
    PER_VALUE = PyUnicode_InternFromString("#sdy.sharding_per_value");
    return SDY == NULL || PER_VALUE == NULL ? -1 : 0;
}

/* The values seen so far in a call, by address: a value is its group's once (an entry
 * shared by several lines gives the same values again). A set of pointers in C: a Python
 * dict of ids cost an int and an insertion a value, most of grouping a big file's values. */
typedef struct {
    void **slot;
    size_t mask, used;
} Seen;

static size_t seen_hash(const void *p) {
    return (size_t)(((uintptr_t)p >> 4) * (uintptr_t)0x9E3779B97F4A7C15ull);
}

/* 1 when `p` is new (now added), 0 when seen before, -1 with a MemoryError set */
static int seen_add(Seen *s, void *p) {
    if (2 * (s->used + 1) > s->mask + 1) { /* at most half full: grow */
        size_t cap = s->mask ? 2 * (s->mask + 1) : 64;
        void **slot = PyMem_Calloc(cap, sizeof(void *));
        if (slot == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t k = 0; s->mask && k <= s->mask; k++) {
            if (s->slot[k] == NULL)
                continue;
            size_t h = seen_hash(s->slot[k]) & (cap - 1);
            while (slot[h] != NULL)
                h = (h + 1) & (cap - 1);
            slot[h] = s->slot[k];
        }
        PyMem_Free(s->slot);
        s->slot = slot;
        s->mask = cap - 1;
    }
    size_t h = seen_hash(p) & s->mask;
    while (s->slot[h] != NULL) {
        if (s->slot[h] == p)
            return 0;
        h = (h + 1) & s->mask;
    }
    s->slot[h] = p;
    s->used++;
    return 1;
}

/* Count one value of `text` at row `i` into `groups` (text -> [count, firsts, values]),
 * keeping the first `keep` (name, row, column), and always the first, and the value when
 * not `seen` before: 0, or -1 with an error set */
static int count(PyObject *groups, PyObject *text, PyObject *name, PyObject *i,
                 PyObject *column, PyObject *v, Py_ssize_t keep, Seen *seen) {
    PyObject *e = PyDict_GetItemWithError(groups, text); /* borrowed */
    if (e == NULL) {
        if (PyErr_Occurred())
            return -1;
        int failed = 1;
        PyObject *where = PyTuple_Pack(3, name, i, column);
        PyObject *firsts = where == NULL ? NULL : PyList_New(1);
        PyObject *values = firsts == NULL ? NULL : PyList_New(1);
        PyObject *one = values == NULL ? NULL : PyLong_FromLong(1);
        int fresh = one == NULL ? -1 : seen_add(seen, v);
        if (fresh >= 0) {
            PyList_SET_ITEM(firsts, 0, Py_NewRef(where));
            /* (a value is seen under one text only: new here) */
            PyList_SET_ITEM(values, 0, Py_NewRef(v));
            PyObject *entry = PyList_New(3);
            if (entry != NULL) {
                PyList_SET_ITEM(entry, 0, Py_NewRef(one));
                PyList_SET_ITEM(entry, 1, Py_NewRef(firsts));
                PyList_SET_ITEM(entry, 2, Py_NewRef(values));
            }
            failed = entry == NULL || PyDict_SetItem(groups, text, entry) < 0;
            Py_XDECREF(entry);
        }
        Py_XDECREF(where);
        Py_XDECREF(firsts);
        Py_XDECREF(values);
        Py_XDECREF(one);
        return failed ? -1 : 0;
    }
    if (!PyList_CheckExact(e) || PyList_GET_SIZE(e) != 3 ||
        !PyList_CheckExact(PyList_GET_ITEM(e, 2))) {
        PyErr_SetString(PyExc_TypeError, "text_groups: a group must be [count, firsts, values]");
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(PyList_GET_ITEM(e, 0));
    if (n == -1 && PyErr_Occurred())
        return -1;
    PyObject *more = PyLong_FromSsize_t(n + 1);
    if (more == NULL)
        return -1;
    PyList_SetItem(e, 0, more); /* steals `more` */
    if (n + 1 <= keep) {
        PyObject *where = PyTuple_Pack(3, name, i, column);
        if (where == NULL || PyList_Append(PyList_GET_ITEM(e, 1), where) < 0) {
            Py_XDECREF(where);
            return -1;
        }
        Py_DECREF(where);
    }
    int fresh = seen_add(seen, v);
    if (fresh < 0)
        return -1;
    return fresh ? PyList_Append(PyList_GET_ITEM(e, 2), v) : 0;
}

/* The text a value of its own is grouped under (a new reference): its text for a Shardy
 * sharding, else `own_text(v)`; NULL with an error set */
static PyObject *text_of(PyObject *v, PyObject *const *f, PyObject *own_text) {
    PyObject *text = f[FV_TEXT];
    int sdy = f[FV_NOTATION] == SDY;
    if (!sdy && PyUnicode_Check(f[FV_NOTATION])) {
        sdy = PyUnicode_Compare(f[FV_NOTATION], SDY) == 0;
        if (PyErr_Occurred())
            return NULL;
    }
    if (sdy && PyUnicode_Check(text)) {
        int per_value = PyUnicode_Tailmatch(text, PER_VALUE, 0, PY_SSIZE_T_MAX, -1);
        if (per_value < 0)
            return NULL;
        if (!per_value)
            return Py_NewRef(text);
    }
    return PyObject_CallOneArg(own_text, v);
}

const char fs_text_groups_doc[] =
    "text_groups(items, value_type, own_text, rows, keep) -> dict\n\n"
    "The values of a module's column entries `items` grouped by their own sharding text, as\n"
    "pipeline.module_summary.text_groups_py groups them: text -> [count, the first `keep`\n"
    "(name, row, column), its distinct values (by identity)], in order of first use. A `value_type` entry\n"
    "is one value (its text, or own_text(value) when it is not a plain Shardy sharding);\n"
    "any other entry's values are rows(entry): (text, name, column, value) each.";

PyObject *fs_text_groups(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyType_Check(args[1]) || !PyCallable_Check(args[2]) ||
        !PyCallable_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "text_groups(items, value_type, own_text, rows, keep: int)");
        return NULL;
    }
    Py_ssize_t keep = PyLong_AsSsize_t(args[4]);
    if (keep == -1 && PyErr_Occurred())
        return NULL;
    PyObject *items = PySequence_Fast(args[0], "text_groups: items must be a sequence");
    if (items == NULL)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)args[1];
    PyObject *own_text = args[2], *rows_of = args[3];
    Seen seen = {NULL, 0, 0};
    PyObject *groups = PyDict_New();
    if (groups == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        PyObject *row = PyLong_FromSsize_t(i);
        if (row == NULL)
            goto fail;
        int failed;
        PyObject *f[FV_N];
        int got = Py_TYPE(item) == type ? fs_fields(item, f) : 1;
        if (got < 0) {
            failed = 1;
        } else if (got == 0) { /* a value of its own */
            PyObject *text = text_of(item, f, own_text);
            failed = text == NULL ||
                     count(groups, text, f[FV_NAME], row, f[FV_COLUMN], item, keep, &seen) < 0;
            Py_XDECREF(text);
        } else if (Py_TYPE(item) == type) {
            PyErr_SetString(PyExc_TypeError, "text_groups: a value with an unset field");
            failed = 1;
        } else { /* a shared line's values */
            PyObject *rows = PyObject_CallOneArg(rows_of, item);
            PyObject *fast = rows == NULL ? NULL : PySequence_Fast(rows, "rows must be a sequence");
            failed = fast == NULL;
            for (Py_ssize_t k = 0; !failed && k < PySequence_Fast_GET_SIZE(fast); k++) {
                PyObject *r = PySequence_Fast_GET_ITEM(fast, k);
                if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 4) {
                    PyErr_SetString(PyExc_TypeError, "text_groups: a row is (text, name, column, value)");
                    failed = 1;
                    break;
                }
                failed = count(groups, PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1), row,
                               PyTuple_GET_ITEM(r, 2), PyTuple_GET_ITEM(r, 3), keep, &seen) < 0;
            }
            Py_XDECREF(fast);
            Py_XDECREF(rows);
        }
        Py_DECREF(row);
        if (failed)
            goto fail;
    }
    Py_DECREF(items);
    PyMem_Free(seen.slot);
    return groups;
fail:
    Py_XDECREF(groups);
    Py_DECREF(items);
    PyMem_Free(seen.slot);
    return NULL;
}
