/* Objects by address, in C: an open-addressing map from a pointer to an index, at most half
 * full, for the calls that walk a module's entries and must tell one object from another
 * (`_groups.c`: the values already grouped; `_rows.c`: each entry's first place). A Python
 * dict of ids made an int and an insertion a value. */
#include "_fastscan.h"

/* Place `p` -> `val` in a table of `cap` slots that has room (and not `p`) */
static void place(void **key, Py_ssize_t *val, size_t cap, void *p, Py_ssize_t v) {
    size_t h = fs_ptr_hash(p) & (cap - 1);
    while (key[h] != NULL)
        h = (h + 1) & (cap - 1);
    key[h] = p;
    val[h] = v;
}

/* The map at `cap` slots (a power of 2, room for what it holds): 0, or -1 with a
 * MemoryError set */
static int resize(FsPtrMap *m, size_t cap) {
    void **key = PyMem_Calloc(cap, sizeof(void *));
    Py_ssize_t *val = PyMem_Calloc(cap, sizeof(Py_ssize_t));
    if (key == NULL || val == NULL) {
        PyMem_Free(key);
        PyMem_Free(val);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; m->mask && k <= m->mask; k++)
        if (m->key[k] != NULL)
            place(key, val, cap, m->key[k], m->val[k]);
    PyMem_Free(m->key);
    PyMem_Free(m->val);
    m->key = key;
    m->val = val;
    m->mask = cap - 1;
    return 0;
}

/* (what a reservation makes at most: a module of a million entries of one repeated line
 * holds one distinct object) */
#define MAX_RESERVED (1 << 17)

int fs_ptrmap_reserve(FsPtrMap *m, Py_ssize_t n) {
    size_t cap = 64;
    while (n > 0 && cap < MAX_RESERVED && cap < 2 * (size_t)n + 2)
        cap *= 2;
    return cap > m->mask + 1 ? resize(m, cap) : 0;
}

int fs_ptrmap_put(FsPtrMap *m, void *p, Py_ssize_t val, Py_ssize_t *found) {
    if (2 * (m->used + 1) > m->mask + 1 && resize(m, m->mask ? 2 * (m->mask + 1) : 64) < 0)
        return -1;
    size_t h = fs_ptr_hash(p) & m->mask;
    while (m->key[h] != NULL) {
        if (m->key[h] == p) {
            *found = m->val[h];
            return 1;
        }
        h = (h + 1) & m->mask;
    }
    m->key[h] = p;
    m->val[h] = val;
    m->used++;
    return 0;
}

void fs_ptrmap_free(FsPtrMap *m) {
    PyMem_Free(m->key);
    PyMem_Free(m->val);
    m->key = NULL;
    m->val = NULL;
    m->mask = m->used = 0;
}
