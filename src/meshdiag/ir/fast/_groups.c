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

/* A text object a group was found for lately, and whether it is a Shardy value's own text
 * (not per value: its group is its own, no `#sdy.sharding_per_value` test needed) */
#define RECENT 8
typedef struct {
    PyObject *text; /* (a reference held: a text made for the call, equal to its group's
                     * key but not it, could be freed and its address taken by another) */
    Py_ssize_t k;
    int plain_sdy;
} Recent;

/* The groups of a call: each group's entry [index, firsts, values] (its index until the
 * call ends, its count then) and how many values it has counted, kept in C (a new int a
 * value was a fifth of grouping); and the groups the last few texts found (a module's
 * values come in runs of a few sharding text objects: no look-up; kept for the last text
 * alone, a big file's values, alternating between a few shardings, mostly missed it). */
typedef struct {
    PyObject *dict; /* text -> entry */
    PyObject **entry;
    Py_ssize_t *n;
    Py_ssize_t len, cap;
    Recent recent[RECENT]; /* filled in order, then overwritten from the oldest */
    int next;
} Groups;

/* The recent entry of `text` (by identity), or NULL */
static Recent *recent_of(Groups *g, PyObject *text) {
    for (int j = 0; j < RECENT && g->recent[j].text != NULL; j++)
        if (g->recent[j].text == text)
            return &g->recent[j];
    return NULL;
}

static void recent_drop(Groups *g) {
    for (int j = 0; j < RECENT; j++)
        Py_CLEAR(g->recent[j].text);
}

/* The index of `text`'s group, made when new (its entry [index, [], []]): >= 0, or -1
 * with an error set. `plain_sdy`: `text` is a Shardy value's own text (kept with it). */
static Py_ssize_t group_of(Groups *g, PyObject *text, int plain_sdy) {
    Recent *r = recent_of(g, text);
    if (r != NULL) {
        r->plain_sdy |= plain_sdy;
        return r->k;
    }
    PyObject *e = PyDict_GetItemWithError(g->dict, text); /* borrowed */
    Py_ssize_t k;
    if (e != NULL) {
        if (!PyList_CheckExact(e) || PyList_GET_SIZE(e) != 3 ||
            !PyList_CheckExact(PyList_GET_ITEM(e, 1)) ||
            !PyList_CheckExact(PyList_GET_ITEM(e, 2))) {
            PyErr_SetString(PyExc_TypeError,
                            "text_groups: a group must be [count, firsts, values]");
            return -1;
        }
        k = PyLong_AsSsize_t(PyList_GET_ITEM(e, 0));
        if (k == -1 && PyErr_Occurred())
            return -1;
    } else {
        if (PyErr_Occurred())
            return -1;
        if (g->len == g->cap) {
            Py_ssize_t cap = g->cap ? 2 * g->cap : 16;
            PyObject **entry = PyMem_Realloc(g->entry, cap * sizeof(PyObject *));
            if (entry == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            g->entry = entry;
            Py_ssize_t *n = PyMem_Realloc(g->n, cap * sizeof(Py_ssize_t));
            if (n == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            g->n = n;
            g->cap = cap;
        }
        k = g->len;
        PyObject *index = PyLong_FromSsize_t(k);
        PyObject *firsts = index == NULL ? NULL : PyList_New(0);
        PyObject *values = firsts == NULL ? NULL : PyList_New(0);
        e = values == NULL ? NULL : PyList_New(3);
        if (e == NULL) {
            Py_XDECREF(index);
            Py_XDECREF(firsts);
            Py_XDECREF(values);
            return -1;
        }
        PyList_SET_ITEM(e, 0, index);
        PyList_SET_ITEM(e, 1, firsts);
        PyList_SET_ITEM(e, 2, values);
        int failed = PyDict_SetItem(g->dict, text, e) < 0;
        Py_DECREF(e); /* (the dict holds it) */
        if (failed)
            return -1;
        g->entry[k] = e;
        g->n[k] = 0;
        g->len++;
    }
    r = &g->recent[g->next];
    g->next = (g->next + 1) % RECENT;
    Py_XSETREF(r->text, Py_NewRef(text));
    r->k = k;
    r->plain_sdy = plain_sdy;
    return k;
}

/* Count one value of `text` at row `i` into the groups, keeping the first `keep` (name,
 * row, column), and always the first, and the value when not `seen` before: 0, or -1 with
 * an error set */
static int count(Groups *g, PyObject *text, PyObject *name, Py_ssize_t i, PyObject *column,
                 PyObject *v, Py_ssize_t keep, FsPtrMap *seen, int plain_sdy) {
    Py_ssize_t k = group_of(g, text, plain_sdy);
    if (k < 0)
        return -1;
    PyObject *e = g->entry[k];
    Py_ssize_t n = ++g->n[k];
    if (n == 1 || n <= keep) { /* (a group's first place is kept whatever `keep` says) */
        PyObject *row = PyLong_FromSsize_t(i);
        PyObject *where = row == NULL ? NULL : PyTuple_Pack(3, name, row, column);
        Py_XDECREF(row);
        if (where == NULL || PyList_Append(PyList_GET_ITEM(e, 1), where) < 0) {
            Py_XDECREF(where);
            return -1;
        }
        Py_DECREF(where);
    }
    Py_ssize_t found;
    int was = fs_ptrmap_put(seen, v, 0, &found);
    if (was < 0)
        return -1;
    return was ? 0 : PyList_Append(PyList_GET_ITEM(e, 2), v);
}

/* Each group's count into its entry, in place of its index: 0, or -1 with an error set */
static int counted(Groups *g) {
    for (Py_ssize_t k = 0; k < g->len; k++) {
        PyObject *n = PyLong_FromSsize_t(g->n[k]);
        if (n == NULL)
            return -1;
        PyList_SetItem(g->entry[k], 0, n); /* steals `n` */
    }
    return 0;
}

/* The text a value of its own is grouped under (a new reference): its text for a Shardy
 * sharding (`*plain_sdy` set), else `own_text(v)`; NULL with an error set. A Shardy text
 * object grouped as such lately (`g`'s recent entries) is not looked at again. */
static PyObject *text_of(Groups *g, PyObject *v, PyObject *const *f, PyObject *own_text,
                         int *plain_sdy) {
    PyObject *text = f[FV_TEXT];
    int sdy = f[FV_NOTATION] == SDY;
    *plain_sdy = 0;
    if (!sdy && PyUnicode_Check(f[FV_NOTATION])) {
        sdy = PyUnicode_Compare(f[FV_NOTATION], SDY) == 0;
        if (PyErr_Occurred())
            return NULL;
    }
    if (sdy && PyUnicode_Check(text)) {
        Recent *r = recent_of(g, text);
        int per_value = r != NULL && r->plain_sdy
                            ? 0
                            : PyUnicode_Tailmatch(text, PER_VALUE, 0, PY_SSIZE_T_MAX, -1);
        if (per_value < 0)
            return NULL;
        if (!per_value) {
            *plain_sdy = 1;
            return Py_NewRef(text);
        }
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
    /* the values grouped so far, by address: a value is its group's once (an entry
     * shared by several lines gives the same values again) */
    FsPtrMap seen = {0};
    Groups g = {.dict = PyDict_New()};
    /* (about a value an entry: the map still grows past that) */
    if (g.dict == NULL || fs_ptrmap_reserve(&seen, PySequence_Fast_GET_SIZE(items)) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        int failed;
        PyObject *f[FV_N];
        FsShape kept; /* (the shape is not read here: a kept one stays numbers) */
        int got = Py_TYPE(item) == type ? fs_fields_kept(item, f, &kept) : 1;
        if (got < 0) {
            failed = 1;
        } else if (got == 0) { /* a value of its own */
            int plain_sdy;
            PyObject *text = text_of(&g, item, f, own_text, &plain_sdy);
            failed = text == NULL || count(&g, text, f[FV_NAME], i, f[FV_COLUMN], item, keep,
                                           &seen, plain_sdy) < 0;
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
                failed = count(&g, PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1), i,
                               PyTuple_GET_ITEM(r, 2), PyTuple_GET_ITEM(r, 3), keep, &seen,
                               0) < 0;
            }
            Py_XDECREF(fast);
            Py_XDECREF(rows);
        }
        if (failed)
            goto fail;
    }
    if (counted(&g) < 0)
        goto fail;
    Py_DECREF(items);
    fs_ptrmap_free(&seen);
    PyMem_Free(g.entry);
    PyMem_Free(g.n);
    recent_drop(&g);
    return g.dict;
fail:
    Py_XDECREF(g.dict);
    Py_DECREF(items);
    fs_ptrmap_free(&seen);
    PyMem_Free(g.entry);
    PyMem_Free(g.n);
    recent_drop(&g);
    return NULL;
}
