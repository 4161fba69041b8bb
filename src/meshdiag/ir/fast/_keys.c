/* The checks' keys of a module's values, worked out in C: `checks.keys.new_keys_py` (its
 * twin), which gives the first value of each key not already known clean.
 *
 * A per-value rule states what decides its verdict as fields of the value (`checks/keys.py`:
 * FIELDS); values with equal keys are both clean or both not. A file of new lines has a
 * million values whose keys mostly repeat (a sharding and its rank, an evenly split shape):
 * working each key out in Python was the floor of the checks, about 0.1-0.4 us a value and
 * rule. Here it is a dict lookup per field and one per key, and none for a value whose
 * fields are the very objects of a key seen before in the call (below).
 *
 * Field codes (the order of checks.keys.FIELDS):
 *   0 notation, 1 mesh_name: the value's own
 *   2 #sharding, 3 #hlo: the parsed object's identity (id())
 *   4 rank: len(shape), else len(local_shape), else None
 *   5 uneven_shape: the shape when its tiled form (hlo) does not split it evenly, else None
 *     (`hlo.split_data_dims`: (data rank, ((dim, tiles), ...)) or None)
 */
#include "_fastscan.h"

#define N_FIELDS 6

static PyObject *K_SPLIT; /* the attribute of a tiled form `uneven_shape` asks for */

int fs_keys_init(void) {
    K_SPLIT = PyUnicode_InternFromString("split_data_dims");
    return K_SPLIT == NULL ? -1 : 0;
}

/* Whether a shape divides evenly under `split` (split_data_dims): the tuple `shape`, or
 * the numbers `kept` holds when it keeps them (rank >= 0). 1 yes, 0 no, -1 error, 2 not the
 * form expected (the caller gives up; a kept shape is asked again as its tuple) */
static int divides(PyObject *split, PyObject *shape, const FsShape *kept) {
    if (split == Py_None)
        return 1;
    int numbers = kept->rank >= 0;
    if (!PyTuple_Check(split) || PyTuple_GET_SIZE(split) != 2 ||
        (!numbers && !PyTuple_Check(shape)))
        return 2;
    Py_ssize_t rank = PyLong_AsSsize_t(PyTuple_GET_ITEM(split, 0));
    if (rank == -1 && PyErr_Occurred())
        return -1;
    if (rank != (numbers ? kept->rank : PyTuple_GET_SIZE(shape)))
        return 1;
    PyObject *dims = PyTuple_GET_ITEM(split, 1);
    if (!PyTuple_Check(dims))
        return 2;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dims); i++) {
        PyObject *dk = PyTuple_GET_ITEM(dims, i);
        if (!PyTuple_Check(dk) || PyTuple_GET_SIZE(dk) != 2)
            return 2;
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(dk, 0));
        if (d == -1 && PyErr_Occurred())
            return -1;
        if (d < 0 || d >= rank)
            return 2;
        PyObject *tiles = PyTuple_GET_ITEM(dk, 1);
        PyObject *size = numbers ? NULL : PyTuple_GET_ITEM(shape, d);
        int o1 = 1, o2 = 1;
        long long a = numbers            ? (o1 = 0, kept->dims[d])
                      : PyLong_Check(size) ? PyLong_AsLongLongAndOverflow(size, &o1)
                                           : 0;
        long long k = PyLong_Check(tiles) ? PyLong_AsLongLongAndOverflow(tiles, &o2) : 0;
        if (!numbers && !PyLong_Check(size))
            o1 = 1; /* (not ints: Python's `%` says) */
        if (!PyLong_Check(tiles))
            o2 = 1;
        if (o1 == 0 && o2 == 0 && k > 0 && a >= 0) { /* the common case, in C */
            if (a % k)
                return 0;
            continue;
        }
        if (PyErr_Occurred())
            return -1;
        if (numbers)
            return 2; /* (Python's `%` decides, on the tuple) */
        PyObject *rem = PyNumber_Remainder(size, tiles);
        if (rem == NULL)
            return -1;
        int nonzero = PyObject_IsTrue(rem);
        Py_DECREF(rem);
        if (nonzero != 0)
            return nonzero < 0 ? -1 : 0;
    }
    return 1;
}

/* The identity (id()) of the objects fields 2 and 3 name, the last one of each kept: the
 * values of a module mostly share their parsed shardings, one int for all of them */
typedef struct {
    void *at[2];
    PyObject *id[2];
} Ids;

static PyObject *id_of(Ids *ids, int which, void *p) {
    if (ids->id[which] == NULL || ids->at[which] != p) {
        PyObject *id = PyLong_FromVoidPtr(p);
        if (id == NULL)
            return NULL;
        Py_XSETREF(ids->id[which], id);
        ids->at[which] = p;
    }
    return Py_NewRef(ids->id[which]);
}

/* The shape whose rank is field 4 (borrowed): the global one, else the per-device one */
static inline PyObject *rank_shape(PyObject *const *f) {
    return f[FV_SHAPE] == Py_None ? f[FV_LOCAL_SHAPE] : f[FV_SHAPE];
}

/* One field of a value whose fields are `f` (fs_fields_kept: its shape in `kept` when
 * kept as numbers): a new reference; NULL with an error set, or NULL without one when the
 * value is not what the field expects (or when a kept shape is needed as its tuple: the
 * caller makes it and asks again) */
static PyObject *field(int code, PyObject *const *f, const FsShape *kept, PyObject *splits,
                       Ids *ids) {
    PyObject *x;
    switch (code) {
    case 0:
        return Py_NewRef(f[FV_NOTATION]);
    case 1:
        return Py_NewRef(f[FV_MESH_NAME]);
    case 2:
        return id_of(ids, 0, f[FV_SHARDING]);
    case 3:
        return id_of(ids, 1, f[FV_HLO]);
    case 4: {
        if (kept->rank >= 0)
            return PyLong_FromLong(kept->rank);
        x = rank_shape(f);
        if (x == Py_None)
            return Py_NewRef(Py_None);
        return PyTuple_Check(x) ? PyLong_FromSsize_t(PyTuple_GET_SIZE(x)) : NULL;
    }
    case 5: {
        PyObject *h = f[FV_HLO], *shape = f[FV_SHAPE];
        if (h == Py_None || (kept->rank < 0 && shape == Py_None))
            return Py_NewRef(Py_None);
        /* the split of each distinct tiled form, asked once per call */
        PyObject *id = PyLong_FromVoidPtr(h);
        if (id == NULL)
            return NULL;
        PyObject *split = PyDict_GetItemWithError(splits, id);
        if (split != NULL) {
            Py_INCREF(split);
        } else if (!PyErr_Occurred()) {
            split = PyObject_GetAttr(h, K_SPLIT);
            if (split != NULL && PyDict_SetItem(splits, id, split) < 0)
                Py_CLEAR(split);
        }
        Py_DECREF(id);
        if (split == NULL)
            return NULL;
        int even = divides(split, shape, kept);
        Py_DECREF(split);
        if (even < 0 || even == 2 || (even == 0 && kept->rank >= 0))
            return NULL; /* (uneven and kept: the caller makes the tuple) */
        return Py_NewRef(even ? Py_None : shape);
    }
    }
    return NULL;
}

/* -- keys seen, by the identities of their fields --------------------------------------
 * Most values of a module repeat a key seen a few values before. Building the key tuple
 * and looking it up in two dicts (hashing its ints, comparing tuples) was most of the
 * cost, about 200 ns a value; a value whose fields are the very objects of a key seen
 * before in the call is skipped after a look in a small table of those identities.
 * Equal identities make equal keys; unequal ones may still make equal keys (two equal
 * strings), which the dicts then find. */

/* The splits (split_data_dims, borrowed from the call's `splits`) of the tiled forms last
 * looked up, by their address: a module's values name a few, in turn, and asking the dict
 * made an int of the address and compared it with the dict's own, a quarter of keying a
 * value. A big file's module names tens of them: with 16 ways, 8,296 of 47,061 values of
 * a 10 MB slice still asked the dict, and `inspect -j1` over it ran 0.75% more
 * instructions than with 64 (256 gain nothing more) */
#define SPLIT_WAYS 64
typedef struct {
    PyObject *hlo[SPLIT_WAYS], *split[SPLIT_WAYS];
} LastSplit;

static inline int split_way(PyObject *h) {
    return (int)(((uintptr_t)h >> 4) % SPLIT_WAYS);
}

/* A key's "raw" form: per field code, the object's address (0-3), the rank + 1 (4, 0 for
 * None), the shape's address or 0 when it splits evenly (5; a kept shape that does not is
 * keyed the slow way, by its tuple). 1 done, 0 when a field is not what it expects (the
 * slow path decides), -1 error. `last`: the call's `LastSplit`. */
static int raw_key(const int *codes, Py_ssize_t nf, PyObject *const *f, const FsShape *kept,
                   PyObject *splits, LastSplit *last, uintptr_t *raw) {
    /* the value's field each of codes 0-3 names */
    static const int OBJECT_FIELD[] = {FV_NOTATION, FV_MESH_NAME, FV_SHARDING, FV_HLO};
    for (Py_ssize_t k = 0; k < nf; k++) {
        switch (codes[k]) {
        case 0:
        case 1:
        case 2:
        case 3:
            raw[k] = (uintptr_t)f[OBJECT_FIELD[codes[k]]];
            break;
        case 4: {
            if (kept->rank >= 0) {
                raw[k] = (uintptr_t)kept->rank + 1;
                break;
            }
            PyObject *x = rank_shape(f);
            if (x == Py_None)
                raw[k] = 0;
            else if (PyTuple_Check(x))
                raw[k] = (uintptr_t)PyTuple_GET_SIZE(x) + 1;
            else
                return 0;
            break;
        }
        default: {
            PyObject *h = f[FV_HLO], *shape = f[FV_SHAPE];
            if (h == Py_None || (kept->rank < 0 && shape == Py_None)) {
                raw[k] = 0;
                break;
            }
            int way = split_way(h);
            PyObject *split = last->split[way]; /* borrowed */
            if (last->hlo[way] != h) {
                PyObject *id = PyLong_FromVoidPtr(h);
                if (id == NULL)
                    return -1;
                split = PyDict_GetItemWithError(splits, id);
                Py_DECREF(id);
                if (split == NULL)
                    return PyErr_Occurred() ? -1 : 0; /* not asked yet: the slow path asks */
                /* (the dict holds it to the end of the call: entries are only added) */
                last->hlo[way] = h;
                last->split[way] = split;
            }
            int even = divides(split, shape, kept);
            if (even < 0)
                return -1;
            if (even == 2 || (even == 0 && kept->rank >= 0))
                return 0; /* (uneven and kept: keyed by its tuple, the dict way) */
            raw[k] = even ? 0 : (uintptr_t)shape;
        }
        }
    }
    return 1;
}

/* lists shorter than this are keyed the dict way only */
#define RAW_MIN_ITEMS 32

typedef struct {
    uintptr_t *slots; /* cap slots of nf words and a word "used" */
    size_t cap, used;
    Py_ssize_t nf;
} RawSet;

static size_t raw_hash(const uintptr_t *raw, Py_ssize_t nf) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (Py_ssize_t k = 0; k < nf; k++)
        h = (h ^ (uint64_t)raw[k]) * 0xff51afd7ed558ccdull;
    return (size_t)(h ^ (h >> 29));
}

/* The slot of `raw` (hash `h`) in the set: its own, or the empty one where it would go */
static uintptr_t *raw_slot(RawSet *t, const uintptr_t *raw, size_t h) {
    size_t width = (size_t)t->nf + 1;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        uintptr_t *slot = t->slots + i * width;
        if (!slot[t->nf] || memcmp(slot, raw, sizeof(uintptr_t) * (size_t)t->nf) == 0)
            return slot;
    }
}

/* Add `raw` (not in the set): 0, or -1 with a MemoryError set */
static int raw_add(RawSet *t, const uintptr_t *raw, size_t h) {
    size_t width = (size_t)t->nf + 1;
    if ((t->used + 1) * 2 > t->cap) { /* at most half full: grow, and place each again */
        size_t ncap = t->cap ? t->cap * 2 : 64;
        uintptr_t *old = t->slots;
        size_t ocap = t->cap;
        t->slots = PyMem_Calloc(ncap * width, sizeof(uintptr_t));
        if (t->slots == NULL) {
            t->slots = old;
            PyErr_NoMemory();
            return -1;
        }
        t->cap = ncap;
        for (size_t i = 0; i < ocap; i++) {
            uintptr_t *o = old + i * width;
            if (o[t->nf])
                memcpy(raw_slot(t, o, raw_hash(o, t->nf)), o, sizeof(uintptr_t) * width);
        }
        PyMem_Free(old);
    }
    uintptr_t *slot = raw_slot(t, raw, h);
    memcpy(slot, raw, sizeof(uintptr_t) * (size_t)t->nf);
    slot[t->nf] = 1;
    t->used++;
    return 0;
}

const char fs_new_keys_doc[] =
    "new_keys(items, value_type, codes, clean) -> list of (key, value) or None\n\n"
    "Of the `value_type` instances in `items`, the first of each key (a tuple of the fields\n"
    "`codes` name, see checks.keys.FIELDS) that is not in the dict `clean`, in order. None\n"
    "when a value is not what its fields expect (the twin then decides).";

PyObject *fs_new_keys(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyType_Check(args[1]) || !PyTuple_Check(args[2]) ||
        !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "new_keys(items, value_type, codes: tuple, clean: dict)");
        return NULL;
    }
    PyObject *items = PySequence_Fast(args[0], "new_keys: items must be a sequence");
    if (items == NULL)
        return NULL;
    PyTypeObject *type = (PyTypeObject *)args[1];
    PyObject *clean = args[3];
    Py_ssize_t nf = PyTuple_GET_SIZE(args[2]);
    int codes[N_FIELDS * 2];
    if (nf < 1 || nf > N_FIELDS * 2) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_ValueError, "new_keys: 1 to 12 field codes");
        return NULL;
    }
    for (Py_ssize_t f = 0; f < nf; f++) {
        long c = PyLong_AsLong(PyTuple_GET_ITEM(args[2], f));
        if (c < 0 || c >= N_FIELDS) {
            Py_DECREF(items);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "new_keys: unknown field code");
            return NULL;
        }
        codes[f] = (int)c;
    }
    Ids ids = {{NULL, NULL}, {NULL, NULL}};
    RawSet done_raw = {NULL, 0, 0, nf}; /* the raw keys of the values dealt with */
    LastSplit last = {{NULL}, {NULL}};
    PyObject *result = NULL; /* the list, None (the twin decides) or NULL with an error */
    PyObject *seen = PyDict_New(), *splits = PyDict_New(), *out = PyList_New(0);
    if (seen == NULL || splits == NULL || out == NULL)
        goto done;
    Py_ssize_t n_items = PySequence_Fast_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n_items; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(items, i);
        if (Py_TYPE(v) != type)
            continue;
        PyObject *fields[FV_N];
        FsShape kept;
        int got = fs_fields_kept(v, fields, &kept);
        if (got < 0)
            goto done;
        uintptr_t raw[N_FIELDS * 2];
        size_t h = 0;
        /* (a short list is keyed the dict way: the table's allocation would cost more) */
        int have_raw = got == 0 && n_items >= RAW_MIN_ITEMS
                           ? raw_key(codes, nf, fields, &kept, splits, &last, raw)
                           : 0;
        if (have_raw < 0)
            goto done;
        if (have_raw) {
            h = raw_hash(raw, nf);
            if (done_raw.cap && raw_slot(&done_raw, raw, h)[nf])
                continue; /* the very fields of a key dealt with */
        }
        PyObject *key = got == 0 ? PyTuple_New(nf) : NULL;
        for (Py_ssize_t f = 0; key != NULL && f < nf; f++) {
            PyObject *x = field(codes[f], fields, &kept, splits, &ids);
            if (x == NULL && kept.rank >= 0 && !PyErr_Occurred()) {
                /* its kept shape needed as the tuple: made, and the field asked again */
                if ((got = fs_fields(v, fields)) != 0) {
                    Py_CLEAR(key);
                    break;
                }
                kept.rank = -1;
                x = field(codes[f], fields, &kept, splits, &ids);
            }
            if (x == NULL) {
                Py_CLEAR(key);
                break;
            }
            PyTuple_SET_ITEM(key, f, x);
        }
        if (key == NULL) {
            if (!PyErr_Occurred()) /* not the form the fields expect: the twin decides */
                result = Py_NewRef(Py_None);
            goto done;
        }
        int known = PyDict_Contains(clean, key);
        if (known == 0)
            known = PyDict_Contains(seen, key);
        int failed = known < 0;
        if (known == 0) {
            PyObject *pair = PyTuple_Pack(2, key, v);
            failed = pair == NULL || PyDict_SetItem(seen, key, Py_None) < 0 ||
                     PyList_Append(out, pair) < 0;
            Py_XDECREF(pair);
        }
        Py_DECREF(key);
        if (failed)
            goto done;
        if (have_raw && raw_add(&done_raw, raw, h) < 0)
            goto done;
    }
    result = Py_NewRef(out);
done:
    PyMem_Free(done_raw.slots);
    Py_XDECREF(seen);
    Py_XDECREF(splits);
    Py_XDECREF(out);
    Py_DECREF(items);
    Py_XDECREF(ids.id[0]);
    Py_XDECREF(ids.id[1]);
    return result;
}

/* -- the entries a rule has not judged ------------------------------------------------
 * A rule's verdicts keep the column entries they judged by identity (`id(entry) ->
 * (entry, True)`, the entry held so its identity is not reused). A module of a dump file
 * mostly holds lines no module before held: walking its entries in Python to find those
 * not judged yet, and gathering their values, was a third of a value rule's call. */

const char fs_fresh_entries_doc[] =
    "fresh_entries(shared, seen, partitioned) -> (entries, values)\n\n"
    "checks.values.fresh_entries_py: of the column entries `shared`, each one the dict `seen`\n"
    "(id -> (entry, _)) does not hold, once, in order, and their values (each entry's\n"
    "`partitioned` when `partitioned`, else its `protos`); each is put in `seen` as\n"
    "(entry, True).";

PyObject *fs_fresh_entries(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "fresh_entries(shared, seen: dict, partitioned)");
        return NULL;
    }
    int part = PyObject_IsTrue(args[2]);
    if (part < 0)
        return NULL;
    PyObject *shared = PySequence_Fast(args[0], "fresh_entries: shared must be a sequence");
    if (shared == NULL)
        return NULL;
    PyObject *seen = args[1], *attr = part ? FS_PARTITIONED : FS_PROTOS;
    PyObject *fresh = PyList_New(0), *values = PyList_New(0), *result = NULL;
    if (fresh == NULL || values == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(shared); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(shared, i);
        PyObject *id = PyLong_FromVoidPtr(item);
        if (id == NULL)
            goto done;
        PyObject *hit = PyDict_GetItemWithError(seen, id); /* borrowed */
        if (hit == NULL && PyErr_Occurred()) {
            Py_DECREF(id);
            goto done;
        }
        if (hit != NULL && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) > 0 &&
            PyTuple_GET_ITEM(hit, 0) == item) {
            Py_DECREF(id); /* judged before (or earlier in this module) */
            continue;
        }
        PyObject *vs = PyObject_GetAttr(item, attr);
        PyObject *pair = vs == NULL ? NULL : PyTuple_Pack(2, item, Py_True);
        int failed = pair == NULL ||
                     PyList_SetSlice(values, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, vs) < 0 ||
                     PyDict_SetItem(seen, id, pair) < 0 || PyList_Append(fresh, item) < 0;
        Py_XDECREF(vs);
        Py_XDECREF(pair);
        Py_DECREF(id);
        if (failed)
            goto done;
    }
    result = PyTuple_Pack(2, fresh, values);
done:
    Py_XDECREF(fresh);
    Py_XDECREF(values);
    Py_DECREF(shared);
    return result;
}

/* -- the entries of one class ----------------------------------------------------------
 * The checks ask for a module's shared entries (`ModuleReport.shared_entries`: its
 * `LineValues`) and whether it has values of its own; a big file's modules hold a million
 * values of their own and no shared entry, and picking the shared ones out in Python was
 * 20 ms of its 1.3 s (one-core `inspect`). */

const char fs_of_class_doc[] = "of_class(items, cls) -> list\n\n"
                               "The items of the list `items` whose class is exactly `cls`, in "
                               "order (`[it for it in\nitems if it.__class__ is cls]`).";

PyObject *fs_of_class(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "of_class(items: list, cls: type)");
        return NULL;
    }
    PyObject *items = args[0], *out = PyList_New(0);
    PyTypeObject *cls = (PyTypeObject *)args[1];
    /* (the list may not change meanwhile: appending runs no Python code of the items') */
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(items); i++) {
        PyObject *it = PyList_GET_ITEM(items, i);
        if (Py_IS_TYPE(it, cls) && PyList_Append(out, it) < 0)
            Py_CLEAR(out);
    }
    return out;
}
