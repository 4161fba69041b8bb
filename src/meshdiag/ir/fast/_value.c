/* `Value`, the scanner's one sharded value, as a class in C: `ir.model.Value` where the
 * extension is built; its twin, the dataclass `ir.model.PyValue`, is the class elsewhere.
 *
 * A big file of new lines makes a million values and lets them go a batch of modules
 * later. The dataclass (slots, so no dict) is a heap type the garbage collector knows:
 * each value was linked into its lists and out again, and freed through the generic slot
 * walk, about 65 ns a value on the 252 MB bench file. This one holds its thirteen fields
 * in a plain struct, outside the collector (a value refers to strs, ints, tuples of ints
 * and parsed shardings, none of which refers back to a value: it is never in a cycle).
 *
 * It behaves as the dataclass does: the same constructor (five fields, then eight with
 * defaults, by position or by name), attributes read and set (an unset one, after `del`,
 * raises AttributeError), `==` field by field between two values (a value is not
 * hashable), the dataclass's repr, `__match_args__`, and pickling by its fields. Its
 * fields are member slots as the dataclass's are, but the shape: a value the native readers
 * make keeps it as numbers until it is read (`FsShape`), and an attribute of its own makes
 * the tuple then. The code here reads and makes a value of this class through its struct
 * (`FsValue`, _fastscan.h) without the slots' offsets.
 */
#include "_fastscan.h"

#include <stddef.h>
#include <structmember.h>

#define REQUIRED 5 /* name, line, column, text, notation: the rest have defaults */

static PyObject *OP_KIND; /* "op", `kind`'s default */

/* A value of `type` with the fields `a` (borrowed, every one set): a new reference, NULL
 * with an error set */
static PyObject *made(PyTypeObject *type, PyObject *const *a) {
    FsValue *v = (FsValue *)type->tp_alloc(type, 0);
    if (v == NULL)
        return NULL;
    for (int i = 0; i < FV_N; i++)
        v->f[i] = Py_NewRef(a[i]);
    return (PyObject *)v;
}

/* Value(...) called: the fields by position, then by name, checked as the dataclass's
 * __init__ checks them (a vectorcall: parsing the call as a tuple and a dict was slower
 * than the dataclass's own __init__ for names given by keyword) */
static PyObject *value_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs > FV_N) {
        PyErr_Format(PyExc_TypeError,
                     "Value() takes from %d to %d positional arguments but %zd were given",
                     REQUIRED, FV_N, nargs);
        return NULL;
    }
    PyObject *a[FV_N] = {NULL};
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int at = -1;
        for (int i = 0; i < FV_N && at < 0; i++) /* (keywords are interned: pointers first) */
            if (key == FS_FIELDS[i])
                at = i;
        for (int i = 0; i < FV_N && at < 0; i++)
            if (PyUnicode_Check(key) && PyUnicode_Compare(key, FS_FIELDS[i]) == 0)
                at = i;
        if (at < 0) {
            PyErr_Format(PyExc_TypeError, "Value() got an unexpected keyword argument '%S'", key);
            return NULL;
        }
        if (a[at] != NULL) {
            PyErr_Format(PyExc_TypeError, "Value() got multiple values for argument '%s'",
                         FS_FIELD_NAMES[at]);
            return NULL;
        }
        a[at] = args[nargs + k];
    }
    for (int i = 0; i < REQUIRED; i++) {
        if (a[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "Value() missing required argument: '%s'",
                         FS_FIELD_NAMES[i]);
            return NULL;
        }
    }
    if (a[FV_KIND] == NULL)
        a[FV_KIND] = OP_KIND;
    for (int i = FV_OP; i < FV_N; i++)
        if (a[i] == NULL)
            a[i] = Py_None;
    return made((PyTypeObject *)type, a);
}

/* Value.__new__(Value, ...): the call's own parsing (`value_vectorcall`) */
static PyObject *value_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    return PyVectorcall_Call((PyObject *)type, args, kwds);
}

static void value_dealloc(FsValue *v) {
    for (int i = 0; i < FV_N; i++)
        Py_XDECREF(v->f[i]);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

PyObject *fs_value_shape(FsValue *v) {
    if (v->kept_rank) {
        FsShape kept = {NULL, v->kept_rank - 1, {0}};
        memcpy(kept.dims, v->dims, sizeof kept.dims);
        PyObject *t = fs_shape_tuple(&kept);
        if (t == NULL)
            return NULL;
        v->f[FV_SHAPE] = t; /* (NULL while kept) */
        v->kept_rank = 0;
    }
    if (v->f[FV_SHAPE] == NULL)
        PyErr_SetString(PyExc_AttributeError, "'Value' object has no attribute 'shape'");
    return v->f[FV_SHAPE];
}

/* 0 when every field of `v` is set (a kept shape made into its tuple), else -1 with the
 * dataclass's AttributeError (or another error) */
static int all_set(FsValue *v) {
    if (v->kept_rank && fs_value_shape(v) == NULL)
        return -1;
    for (int i = 0; i < FV_N; i++) {
        if (v->f[i] == NULL) {
            PyErr_Format(PyExc_AttributeError, "'Value' object has no attribute '%s'",
                         FS_FIELD_NAMES[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *value_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(a) != Py_TYPE(b))
        Py_RETURN_NOTIMPLEMENTED;
    FsValue *x = (FsValue *)a, *y = (FsValue *)b;
    for (int i = 0; i < FV_N; i++) { /* as the tuples of their fields compare */
        /* (asked again each field, and held while compared: a field's __eq__ is Python
         * code, which may change the values) */
        if (all_set(x) < 0 || all_set(y) < 0)
            return NULL;
        PyObject *p = Py_NewRef(x->f[i]), *q = Py_NewRef(y->f[i]);
        int eq = PyObject_RichCompareBool(p, q, Py_EQ);
        Py_DECREF(p);
        Py_DECREF(q);
        if (eq < 0)
            return NULL;
        if (!eq)
            return PyBool_FromLong(op == Py_NE);
    }
    return PyBool_FromLong(op == Py_EQ);
}

static PyObject *value_repr(FsValue *v) {
    if (all_set(v) < 0)
        return NULL;
    int busy = Py_ReprEnter((PyObject *)v); /* (as the dataclass's recursive_repr) */
    if (busy != 0)
        return busy > 0 ? PyUnicode_FromString("...") : NULL;
    PyObject *parts = PyList_New(0), *out = NULL;
    for (int i = 0; parts != NULL && i < FV_N; i++) {
        /* (each field checked and held: a field's repr is Python code, which may change
         * the value) */
        PyObject *f = i == FV_SHAPE ? fs_value_shape(v) : v->f[i], *p = NULL;
        if (f == NULL) {
            all_set(v);
        } else {
            Py_INCREF(f);
            p = PyUnicode_FromFormat("%s=%R", FS_FIELD_NAMES[i], f);
            Py_DECREF(f);
        }
        if (p == NULL || PyList_Append(parts, p) < 0) {
            Py_XDECREF(p);
            Py_CLEAR(parts);
            break;
        }
        Py_DECREF(p);
    }
    if (parts != NULL) {
        PyObject *sep = PyUnicode_FromString(", ");
        PyObject *body = sep == NULL ? NULL : PyUnicode_Join(sep, parts);
        if (body != NULL)
            out = PyUnicode_FromFormat("Value(%U)", body); /* (no subclasses) */
        Py_XDECREF(body);
        Py_XDECREF(sep);
        Py_DECREF(parts);
    }
    Py_ReprLeave((PyObject *)v);
    return out;
}

static PyObject *value_reduce(FsValue *v, PyObject *Py_UNUSED(ignored)) {
    if (all_set(v) < 0)
        return NULL;
    PyObject *fields = PyTuple_New(FV_N);
    if (fields == NULL)
        return NULL;
    for (int i = 0; i < FV_N; i++)
        PyTuple_SET_ITEM(fields, i, Py_NewRef(v->f[i]));
    return Py_BuildValue("(ON)", (PyObject *)Py_TYPE(v), fields);
}

static PyMethodDef value_methods[] = {
    {"__reduce__", (PyCFunction)value_reduce, METH_NOARGS, "The class and the fields."},
    {NULL, NULL, 0, NULL},
};

/* every field a member slot but the shape, which a value may keep as numbers until read */
_Static_assert(FV_SHAPE == 7, "value_members leaves out the shape's slot, the eighth");
#define MEMBER(i) {(char *)0, T_OBJECT_EX, offsetof(FsValue, f) + (i) * sizeof(PyObject *), 0, NULL}
static PyMemberDef value_members[FV_N] = {
    MEMBER(0), MEMBER(1), MEMBER(2),  MEMBER(3),  MEMBER(4),  MEMBER(5), MEMBER(6),
    MEMBER(8), MEMBER(9), MEMBER(10), MEMBER(11), MEMBER(12), {NULL},
};

static PyObject *shape_get(FsValue *v, void *Py_UNUSED(closure)) {
    return Py_XNewRef(fs_value_shape(v));
}

/* set as a member slot is (`del`: unset, an AttributeError when it is unset already) */
static int shape_set(FsValue *v, PyObject *shape, void *Py_UNUSED(closure)) {
    if (shape == NULL && v->f[FV_SHAPE] == NULL && !v->kept_rank) {
        PyErr_SetString(PyExc_AttributeError, "shape");
        return -1;
    }
    v->kept_rank = 0;
    Py_XSETREF(v->f[FV_SHAPE], Py_XNewRef(shape));
    return 0;
}

static PyGetSetDef value_getset[] = {
    {"shape", (getter)shape_get, (setter)shape_set, NULL, NULL},
    {NULL},
};

PyTypeObject FsValueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "meshdiag.ir.model.Value",
    .tp_basicsize = sizeof(FsValue),
    .tp_dealloc = (destructor)value_dealloc,
    .tp_repr = (reprfunc)value_repr,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One sharded value (ir.model.Value; its twin is the dataclass ir.model.PyValue).",
    .tp_richcompare = value_richcompare,
    .tp_methods = value_methods,
    .tp_members = value_members,
    .tp_getset = value_getset,
    .tp_new = value_new,
    .tp_vectorcall = value_vectorcall,
};

/* The class, ready: a new reference, or NULL with an error set */
PyObject *fs_value_type(void) {
    if (FsValueType.tp_dict == NULL) {
        for (int i = 0, k = 0; i < FV_N; i++)
            if (i != FV_SHAPE)
                value_members[k++].name = FS_FIELD_NAMES[i];
        OP_KIND = PyUnicode_InternFromString("op");
        if (OP_KIND == NULL || PyType_Ready(&FsValueType) < 0)
            return NULL;
        PyObject *names = PyTuple_New(FV_N);
        if (names == NULL)
            return NULL;
        for (int i = 0; i < FV_N; i++)
            PyTuple_SET_ITEM(names, i, Py_NewRef(FS_FIELDS[i]));
        int failed = PyDict_SetItemString(FsValueType.tp_dict, "__match_args__", names) < 0;
        Py_DECREF(names);
        if (failed)
            return NULL;
        PyType_Modified(&FsValueType);
    }
    return Py_NewRef((PyObject *)&FsValueType);
}

const char fs_value_adopt_doc[] =
    "adopt_dataclass(twin): give Value the dataclass twin's field descriptions\n"
    "(__dataclass_fields__, __dataclass_params__), so that dataclasses.fields, asdict,\n"
    "replace and is_dataclass see it as the twin. Its fields must be Value's, in order.";

PyObject *fs_value_adopt(PyObject *Py_UNUSED(self), PyObject *twin) {
    static const char *const keys[] = {"__dataclass_fields__", "__dataclass_params__"};
    PyObject *match = PyObject_GetAttrString(twin, "__match_args__");
    if (match == NULL)
        return NULL;
    PyObject *ours = PyDict_GetItemString(FsValueType.tp_dict, "__match_args__"); /* borrowed */
    int same = ours == NULL ? 0 : PyObject_RichCompareBool(match, ours, Py_EQ);
    Py_DECREF(match);
    if (same <= 0) {
        if (same == 0)
            PyErr_SetString(PyExc_TypeError, "adopt_dataclass: not Value's fields");
        return NULL;
    }
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        PyObject *got = PyObject_GetAttrString(twin, keys[k]);
        int failed = got == NULL || PyDict_SetItemString(FsValueType.tp_dict, keys[k], got) < 0;
        Py_XDECREF(got);
        if (failed)
            return NULL;
    }
    PyType_Modified(&FsValueType);
    Py_RETURN_NONE;
}
