/* What the native sources of meshdiag.ir.fast._fastscan share. */
#ifndef MESHDIAG_FASTSCAN_H
#define MESHDIAG_FASTSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* s[a:b], ASCII text, as a str (copied in: no decoding) */
static inline PyObject *fs_ascii_part(const char *s, Py_ssize_t a, Py_ssize_t b) {
    PyObject *o = PyUnicode_New(b - a, 127);
    if (o != NULL)
        memcpy(PyUnicode_DATA(o), s + a, (size_t)(b - a));
    return o;
}

/* Whether s[0:n] is all ASCII: 64 bytes a step with SSE2 (every x86-64 has it; bytes.isascii
 * goes a word at a time, 2% of the instructions of a big file's scan), then 8 (a byte at a
 * time was 2% of reading a big file's plain lines) */
static inline int fs_all_ascii(const char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
#ifdef __SSE2__
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(s + i + 48));
        if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d))))
            return 0;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull)
            return 0;
    }
    for (; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return 0;
    return 1;
}

/* A hash of an address for open addressing (objects are 16-byte aligned: the low bits
 * say nothing) */
static inline size_t fs_ptr_hash(const void *p) {
    return (size_t)(((uintptr_t)p >> 4) * (uintptr_t)0x9E3779B97F4A7C15ull);
}

/* _ptrmap.c: objects by address (pointer -> index), zeroed to start ({0}), freed with
 * fs_ptrmap_free. put: 0 when `p` is new (now mapped to `val`), 1 when it was there (its
 * index in *found), -1 with a MemoryError set. */
typedef struct {
    void **key;
    Py_ssize_t *val;
    size_t mask, used;
} FsPtrMap;
int fs_ptrmap_put(FsPtrMap *m, void *p, Py_ssize_t val, Py_ssize_t *found);
/* Room for `n` entries made at once (a walk knows how many it puts, at least: growing by
 * doubling zeroed and rehashed a big module's tables several times): 0, or -1 with a
 * MemoryError set */
int fs_ptrmap_reserve(FsPtrMap *m, Py_ssize_t n);
void fs_ptrmap_free(FsPtrMap *m);

/* _values.c: s[a:b] (ASCII) as a str, and an int, each kept by content when made (a value's
 * name, op and column, a tensor's dims repeat): new references, NULL with an error set */
PyObject *fs_str_piece(const char *s, Py_ssize_t a, Py_ssize_t b);
PyObject *fs_int_piece(long long v);

/* _fastscan.c: index after the bracket closing data[pos] (quotes skipped, `->` is no
 * bracket); -1 when the text ends first, -2 with a MemoryError set */
Py_ssize_t fs_match_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos);

/* _fastscan.c: where the last top-level ` : ` of an op line's text from `start` ends, and
 * the `->` after it (-1 each when none): `text._top_colon`, the reference */
void fs_top_colon(int kind, const void *data, Py_ssize_t n, Py_ssize_t start, Py_ssize_t *colon,
                  Py_ssize_t *arrow);

/* A tensor type's shape as the field readers read it: up to FS_KEPT_DIMS dims below 2**31
 * kept as numbers (`rank` of them, `tuple` NULL), made into the tuple of ints a Value holds
 * only when something asks for it (`fs_shape_tuple`); any other shape as that tuple (a new
 * reference, `rank` -1). A big file's million values are mostly checked and counted by the
 * native code, which reads the numbers: making, then freeing, a tuple for each was a
 * twentieth of its run. */
#define FS_KEPT_DIMS 4
typedef struct {
    PyObject *tuple;
    int32_t rank;
    int32_t dims[FS_KEPT_DIMS];
} FsShape;
/* The shape as a tuple of ints: a new reference, NULL with an error set */
PyObject *fs_shape_tuple(const FsShape *shape);
/* Let go of the tuple a shape holds, if any */
static inline void fs_shape_clear(FsShape *shape) { Py_CLEAR(shape->tuple); }

/* _fields.c: the plain-line field readers of meshdiag/ir/fields.py. The spans of a plain
 * constraint or op line (name, op, the sharding start..stop, the element type) and of a
 * plain signature entry (name, the sharding a..e, the element type), as offsets into the
 * text. */
typedef struct {
    Py_ssize_t name_a, name_b, op_a, op_b, start, stop, dt, dt_end;
} FsConstraint;
typedef FsConstraint FsOp;
typedef struct {
    Py_ssize_t name_a, name_b, a, e, dt, dt_end, next;
} FsEntry;
/* 1 read (the shape in *shape: fs_shape_clear it), 0 another form, -1 error set; ASCII
 * text only */
int fs_read_constraint(const char *s, Py_ssize_t n, FsConstraint *f, FsShape *shape);
int fs_read_entry(const char *s, Py_ssize_t n, Py_ssize_t from, Py_ssize_t to, FsEntry *f,
                  FsShape *shape);
int fs_read_op(const char *s, Py_ssize_t n, FsOp *f, FsShape *shape);
int fs_read_hlo(const char *s, Py_ssize_t n, FsOp *f, FsShape *shape); /* (always a tuple) */
PyObject *fs_hlo_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_hlo_fields_doc[];
PyObject *fs_op_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_op_fields_doc[];
PyObject *fs_constraint_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fs_entry_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_constraint_fields_doc[];
extern const char fs_entry_fields_doc[];
/* _fastscan.c: where in `w` (m >= 1 bytes) its rarest byte is, by how often bytes occur
 * in dumps */
Py_ssize_t fs_anchor_of(const char *w, Py_ssize_t m);
/* where `needle` first is in s[a:b] (-1: nowhere: str.find); `needle` is a string
 * constant (its length and rarest byte are kept by its address) */
Py_ssize_t fs_find(const char *s, Py_ssize_t a, Py_ssize_t b, const char *needle);

/* _values.c: a Value's fields in its class's order (model.Value: the native class of
 * _value.c, or its twin model.PyValue, a dataclass with slots) */
enum {
    FV_NAME, FV_LINE, FV_COLUMN, FV_TEXT, FV_NOTATION, FV_KIND, FV_OP, FV_SHAPE,
    FV_LOCAL_SHAPE, FV_DTYPE, FV_MESH_NAME, FV_SHARDING, FV_HLO, FV_N
};
/* and their names in that order, as C strings and interned once at module init
 * (fs_values_init: the lookups of the native code compare pointers) */
extern const char *const FS_FIELD_NAMES[FV_N];
extern PyObject *FS_FIELDS[FV_N];
/* a shared line's values (`LineValues`): as a partitioned module holds them, as written */
extern PyObject *FS_PARTITIONED, *FS_PROTOS;
/* The fields of `v` (FV_N, borrowed) read from its slots: 0; 1 when its class does not
 * have the Value's slots or one is unset; -1 with an error set. A native value's kept
 * shape is made into its tuple first. */
int fs_fields(PyObject *v, PyObject **out);
/* fs_fields, but a native value's kept shape stays numbers: out[FV_SHAPE] NULL and the
 * dims in *kept (rank >= 0); for any other value kept->rank is -1 */
int fs_fields_kept(PyObject *v, PyObject **out, FsShape *kept);

/* _value.c: the native Value, its fields in one array, read (`fs_fields`) and made
 * (`_values.c`) through it: through the slots' offsets and a zeroed generic allocation,
 * `inspect -j1` over a 10 MB slice of the big bench file ran 1.3% more instructions */
typedef struct {
    PyObject_HEAD PyObject *f[FV_N];
    /* a shape kept as numbers until asked for (FsShape): its rank + 1, with f[FV_SHAPE]
     * NULL; 0 (as a zeroed allocation has it) when f[FV_SHAPE] is the field */
    int32_t kept_rank;
    int32_t dims[FS_KEPT_DIMS];
} FsValue;
/* _value.c: the shape of a native value, its kept dims made into the tuple now if need be
 * (borrowed; NULL when unset, with an AttributeError, or with another error) */
PyObject *fs_value_shape(FsValue *v);
extern PyTypeObject FsValueType;

/* _values.c: values of plain lines made from their sharding's prototype (fields.py) */
int fs_values_init(void);
/* The prototypes found last in one call, by their sharding text (in the caller's buffer
 * for the call): see proto_of in _values.c. Zeroed to start, cleared at the end. */
#define FS_PROTO_CACHE 4
typedef struct {
    const char *text[FS_PROTO_CACHE];
    Py_ssize_t len[FS_PROTO_CACHE];
    PyObject *proto[FS_PROTO_CACHE]; /* strong references */
    int next;
} FsProtoCache;
void fs_proto_cache_clear(FsProtoCache *cache);
/* _values.c: the plain signature entry s[a:e] (ASCII) as a value made from its sharding's
 * prototype, appended to the columns: 1, 0 (not plain or no prototype: nothing done), -1.
 * With `e` -1, the entry from `a` to the `,` or `)` after it, whose index goes in *next
 * (fs_read_entry) */
int fs_entry_value(const char *s, Py_ssize_t n, Py_ssize_t a, Py_ssize_t e, PyObject *lineno,
                   PyObject *protos, PyObject *lines_out, PyObject *items_out,
                   FsProtoCache *cache, Py_ssize_t *next);
/* The plain constraint or op line s[0:n] numbered `lineno` as a Value appended to the
 * columns: 1 done, 0 not such a line or no prototype for its sharding in `protos`, -1
 * error set (`cache`: the call's FsProtoCache, or NULL) */
int fs_plain_line(const char *s, Py_ssize_t n, Py_ssize_t lineno, PyObject *protos,
                  PyObject *lines_out, PyObject *items_out, FsProtoCache *cache);
PyObject *fs_plain_line_py(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_plain_line_doc[];
PyObject *fs_entry_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_entry_values_doc[];

/* _json.c: a module's values as JSON (pipeline.inspect.values_json_text_py) */
PyObject *fs_values_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_values_json_doc[];

/* _groups.c: a module's values by their own sharding text
 * (pipeline.module_summary.text_groups_py) */
int fs_groups_init(void);
PyObject *fs_text_groups(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_text_groups_doc[];

/* _keys.c: the checks' keys of a module's values (checks.keys.new_keys_py) */
int fs_keys_init(void);
PyObject *fs_new_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_new_keys_doc[];
/* and the column entries a rule has not judged yet (checks.values.fresh_entries_py) */
PyObject *fs_fresh_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_fresh_entries_doc[];
PyObject *fs_of_class(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_of_class_doc[];
/* _value.c: the class Value (ir.model.Value's twin), ready: a new reference, NULL with an
 * error set */
PyObject *fs_value_type(void);
/* and its field descriptions taken from the dataclass twin (adopt_dataclass) */
PyObject *fs_value_adopt(PyObject *self, PyObject *twin);
extern const char fs_value_adopt_doc[];
/* _rows.c: a module's values by device layout (pipeline.dump_summary.module_rows_py) */
PyObject *fs_module_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_module_rows_doc[];

/* _grid.c: a picture's grids of whole tiles drawn (report.whole.grid_text_py) */
PyObject *fs_grid_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_grid_text_doc[];
/* _grid.c: a summary's compact picture of whole tiles (report.whole.whole_text) */
PyObject *fs_whole_grid_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_whole_grid_text_doc[];
PyObject *fs_whole_table_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_whole_table_text_doc[];

/* _files.c: a small regular file read whole (`ir.scan.read_small_file_py`, the twin) */
PyObject *fs_read_small(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_read_small_doc[];

#endif
