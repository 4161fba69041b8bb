/* A picture's grids of whole tiles drawn in C: the twin of `report.whole.grid_text_py`.
 *
 * `meshdiag inspect FILE` draws a picture of every distinct sharding of every module: a
 * big file of new programs draws ten thousand, mostly small grids of whole tiles (each cell
 * its devices over its ranges, in a box). Drawn in Python, centring and joining each cell's
 * text, one such grid took about as long as reading a thousand of the file's lines. The
 * lines here are the twin's, character for character (tested against it); any input it
 * does not expect (a text not ASCII, lists of other lengths) returns NotImplemented and the
 * caller asks the twin.
 */
#include "_fastscan.h"

/* rich's SQUARE box, as the twin draws it */
#define BOX_H 0x2500  /* ─ */
#define BOX_V 0x2502  /* │ */
#define BOX_TL 0x250C /* ┌ */
#define BOX_TR 0x2510 /* ┐ */
#define BOX_BL 0x2514 /* └ */
#define BOX_BR 0x2518 /* ┘ */
#define BOX_LT 0x251C /* ├ */
#define BOX_RT 0x2524 /* ┤ */
#define BOX_TT 0x252C /* ┬ */
#define BOX_BT 0x2534 /* ┴ */
#define BOX_X 0x253C  /* ┼ */

typedef struct {
    Py_UCS2 *s;
    Py_ssize_t n, cap;
} Buf;

/* Room for `more` characters: 0, or -1 with a MemoryError set */
static int reserve(Buf *b, Py_ssize_t more) {
    if (b->n + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + more)
        cap *= 2;
    Py_UCS2 *s = PyMem_Realloc(b->s, (size_t)cap * sizeof(Py_UCS2));
    if (s == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

static inline void put(Buf *b, Py_UCS2 c) { b->s[b->n++] = c; }

static inline void put_run(Buf *b, Py_UCS2 c, Py_ssize_t k) {
    for (Py_ssize_t i = 0; i < k; i++)
        b->s[b->n++] = c;
}

static inline void put_ascii(Buf *b, PyObject *text) {
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++)
        b->s[b->n++] = s[i];
}

/* The padding `str.center` puts left of a text `n` long in `w` columns (the rest goes
 * right): Python's own rule, odd margins included */
static inline Py_ssize_t left_pad(Py_ssize_t n, Py_ssize_t w) {
    Py_ssize_t marg = w - n;
    return marg <= 0 ? 0 : marg / 2 + (marg & w & 1);
}

/* A row of `cols` cells between bars: `a` (or NULL) and `b[c]` as `[a, b]` (`[b]`), or the
 * device texts `texts[c]` when `ranges` is 0; each centred in its width */
static int put_row(Buf *b, PyObject *const *texts, PyObject *a, PyObject *const *col,
                   const Py_ssize_t *widths, Py_ssize_t cols, int ranges) {
    for (Py_ssize_t c = 0; c < cols; c++) {
        Py_ssize_t w = widths[c];
        Py_ssize_t n = ranges ? PyUnicode_GET_LENGTH(col[c]) + 2 +
                                    (a != NULL ? PyUnicode_GET_LENGTH(a) + 2 : 0)
                              : PyUnicode_GET_LENGTH(texts[c]);
        if (reserve(b, 1 + (n > w ? n : w) + 2) < 0)
            return -1;
        put(b, BOX_V);
        Py_ssize_t left = left_pad(n, w), right = n >= w ? 0 : w - n - left;
        put_run(b, ' ', left);
        if (!ranges) {
            put_ascii(b, texts[c]);
        } else {
            put(b, '[');
            if (a != NULL) {
                put_ascii(b, a);
                put(b, ',');
                put(b, ' ');
            }
            put_ascii(b, col[c]);
            put(b, ']');
        }
        put_run(b, ' ', right);
    }
    if (reserve(b, 2) < 0)
        return -1;
    put(b, BOX_V);
    put(b, '\n');
    return 0;
}

/* A rule across the grid: `first`, then each width's bars joined by `mid`, then `last` */
static int put_rule(Buf *b, Py_UCS2 first, Py_UCS2 mid, Py_UCS2 last, const Py_ssize_t *widths,
                    Py_ssize_t cols) {
    Py_ssize_t n = 2 + cols;
    for (Py_ssize_t c = 0; c < cols; c++)
        n += widths[c];
    if (reserve(b, n) < 0)
        return -1;
    put(b, first);
    for (Py_ssize_t c = 0; c < cols; c++) {
        if (c)
            put(b, mid);
        put_run(b, BOX_H, widths[c]);
    }
    put(b, last);
    put(b, '\n');
    return 0;
}

static inline int is_ascii_str(PyObject *o) { return PyUnicode_Check(o) && PyUnicode_IS_ASCII(o); }

/* Whether `list` is a list of `n` ASCII strs (n < 0: any length) */
static int ascii_list(PyObject *list, Py_ssize_t n) {
    if (!PyList_Check(list) || (n >= 0 && PyList_GET_SIZE(list) != n))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
        if (!is_ascii_str(PyList_GET_ITEM(list, i)))
            return 0;
    return 1;
}

/* The outcomes of `draw_grids` other than drawn (0) and failed (-1, an error set) */
#define GRIDS_TABLE 1   /* no grid fits: a table instead (the twin's 0) */
#define GRIDS_GENERAL 2 /* the general path must draw them (the twin's None) */
#define GRIDS_UNEXPECTED 3 /* an input the twin must judge (NotImplemented) */

/* `grid_text_py` of rows / cols_list / grids drawn into `b`, each line ended by a newline:
 * 0, or one of the outcomes above (nothing drawn), or -1 with an error set */
static int draw_grids(Buf *b, PyObject *rows, PyObject *cols_list, PyObject *grids,
                      Py_ssize_t width, Py_ssize_t min_label, Py_ssize_t min_cell) {
    if (!ascii_list(cols_list, -1) || !PyList_Check(grids) || PyList_GET_SIZE(grids) == 0 ||
        (rows != Py_None && (!ascii_list(rows, -1) || PyList_GET_SIZE(rows) == 0)))
        return GRIDS_UNEXPECTED;
    Py_ssize_t cols = PyList_GET_SIZE(cols_list), n_grids = PyList_GET_SIZE(grids);
    Py_ssize_t n_rows = rows == Py_None ? 1 : PyList_GET_SIZE(rows);
    if (cols == 0)
        return GRIDS_UNEXPECTED;
    PyObject *const *col = &PyList_GET_ITEM(cols_list, 0);
    /* every grid: (title or None, cells) with cells[1] `n_rows` lists of `cols` texts and
     * cells[2] `cols` ints */
    for (Py_ssize_t g = 0; g < n_grids; g++) {
        PyObject *grid = PyList_GET_ITEM(grids, g), *cells, *texts, *widest;
        if (!PyTuple_Check(grid) || PyTuple_GET_SIZE(grid) != 2)
            return GRIDS_UNEXPECTED;
        PyObject *title = PyTuple_GET_ITEM(grid, 0);
        cells = PyTuple_GET_ITEM(grid, 1);
        if ((title != Py_None && !is_ascii_str(title)) || !PyTuple_Check(cells) ||
            PyTuple_GET_SIZE(cells) < 3)
            return GRIDS_UNEXPECTED;
        texts = PyTuple_GET_ITEM(cells, 1);
        widest = PyTuple_GET_ITEM(cells, 2);
        if (!PyList_Check(texts) || PyList_GET_SIZE(texts) != n_rows || !PyList_Check(widest) ||
            PyList_GET_SIZE(widest) != cols)
            return GRIDS_UNEXPECTED;
        for (Py_ssize_t r = 0; r < n_rows; r++)
            if (!ascii_list(PyList_GET_ITEM(texts, r), cols))
                return GRIDS_UNEXPECTED;
        for (Py_ssize_t c = 0; c < cols; c++)
            if (!PyLong_CheckExact(PyList_GET_ITEM(widest, c)))
                return GRIDS_UNEXPECTED;
    }
    /* a column as wide as its widest line and 2 (`[a, b]` is 4 more than a and b, `[b]` 2
     * more than b) */
    Py_ssize_t longest_row = 0, brackets = 2, longest_col = 0;
    if (rows != Py_None) {
        brackets = 4;
        for (Py_ssize_t r = 0; r < n_rows; r++) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(PyList_GET_ITEM(rows, r));
            longest_row = n > longest_row ? n : longest_row;
        }
    }
    for (Py_ssize_t c = 0; c < cols; c++) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(col[c]);
        longest_col = n > longest_col ? n : longest_col;
    }
    Py_ssize_t room = width - (cols + 1); /* borders */
    int result = -1;
    Py_ssize_t *natural = PyMem_Malloc((size_t)(n_grids * cols + cols) * sizeof(Py_ssize_t));
    if (natural == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *widths = natural + n_grids * cols;
    int fits = 1;
    for (Py_ssize_t g = 0; g < n_grids; g++) {
        PyObject *widest = PyTuple_GET_ITEM(PyTuple_GET_ITEM(PyList_GET_ITEM(grids, g), 1), 2);
        Py_ssize_t sum = 0;
        for (Py_ssize_t c = 0; c < cols; c++) {
            Py_ssize_t devices = PyLong_AsSsize_t(PyList_GET_ITEM(widest, c));
            if (devices == -1 && PyErr_Occurred())
                goto done;
            Py_ssize_t w = min_label - 2, ranged = longest_row + PyUnicode_GET_LENGTH(col[c]) +
                                                     brackets;
            w = devices > w ? devices : w;
            w = ranged > w ? ranged : w;
            natural[g * cols + c] = w + 2;
            sum += w + 2;
        }
        if (sum > room)
            fits = 0;
    }
    if (!fits) {
        /* the general path elides device lists into cells of min_cell + 6, which cannot
         * help when those are too wide together or a range does not fit one */
        Py_ssize_t narrow = min_cell + 6, widest_range = longest_row + longest_col + brackets;
        result = narrow * cols > room || widest_range + 2 > narrow ? GRIDS_TABLE : GRIDS_GENERAL;
        goto done;
    }
    for (Py_ssize_t g = 0; g < n_grids; g++) {
        PyObject *grid = PyList_GET_ITEM(grids, g), *title = PyTuple_GET_ITEM(grid, 0);
        PyObject *texts = PyTuple_GET_ITEM(PyTuple_GET_ITEM(grid, 1), 1);
        if (title != Py_None && PyUnicode_GET_LENGTH(title) > 0) {
            if (reserve(b, PyUnicode_GET_LENGTH(title) + 1) < 0)
                goto done;
            put_ascii(b, title);
            put(b, '\n');
        }
        /* `distribute` by the columns' extents, which are equal: every tile is whole */
        const Py_ssize_t *nat = natural + g * cols;
        Py_ssize_t sum = 0, total = 0;
        for (Py_ssize_t c = 0; c < cols; c++)
            sum += nat[c];
        Py_ssize_t wanted = sum > 60 ? sum : 60; /* a grid at least 60 wide, if there is room */
        Py_ssize_t share = (room < wanted ? room : wanted) / cols;
        for (Py_ssize_t c = 0; c < cols; c++) {
            widths[c] = nat[c] > share ? nat[c] : share;
            total += widths[c];
        }
        if (total > room)
            memcpy(widths, nat, (size_t)cols * sizeof(Py_ssize_t));
        if (put_rule(b, BOX_TL, BOX_TT, BOX_TR, widths, cols) < 0)
            goto done;
        for (Py_ssize_t r = 0; r < n_rows; r++) {
            if (r && put_rule(b, BOX_LT, BOX_X, BOX_RT, widths, cols) < 0)
                goto done;
            PyObject *row_texts = PyList_GET_ITEM(texts, r);
            PyObject *a = rows == Py_None ? NULL : PyList_GET_ITEM(rows, r);
            if (put_row(b, &PyList_GET_ITEM(row_texts, 0), NULL, col, widths, cols, 0) < 0 ||
                put_row(b, NULL, a, col, widths, cols, 1) < 0)
                goto done;
        }
        if (put_rule(b, BOX_BL, BOX_BT, BOX_BR, widths, cols) < 0)
            goto done;
    }
    result = 0;
done:
    PyMem_Free(natural);
    return result;
}

const char fs_grid_text_doc[] =
    "grid_text(row_ranges, col_ranges, grids, width, min_label, min_cell) -> str, 0 or None\n\n"
    "report.whole.grid_text_py with its two widths given; NotImplemented for inputs it does\n"
    "not expect (the twin then decides).";

PyObject *fs_grid_text(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t width = PyLong_AsSsize_t(args[3]), min_label = PyLong_AsSsize_t(args[4]),
               min_cell = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    Buf b = {NULL, 0, 0};
    PyObject *result = NULL;
    switch (draw_grids(&b, args[0], args[1], args[2], width, min_label, min_cell)) {
    case 0: /* the lines joined: no newline after the last */
        result = PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, b.s, b.n - 1);
        break;
    case GRIDS_TABLE:
        result = PyLong_FromLong(0);
        break;
    case GRIDS_GENERAL:
        result = Py_NewRef(Py_None);
        break;
    case GRIDS_UNEXPECTED:
        result = Py_NewRef(Py_NotImplemented);
        break;
    }
    PyMem_Free(b.s);
    return result;
}

/* -- a summary's whole picture -------------------------------------------------------------
 * `report.whole.whole_text` of a compact picture without a legend whose one grid shows at
 * most two dims (no facets, no plan in its header): what a big file's summaries draw ten
 * thousand times, on shapes that never repeat. Drawn in Python around `grid_text`, the
 * header, the dims' ranges and the joins took three times as long as the grid itself. */

/* Whether `o` is a str of printable ASCII alone (what the header check passes as is) */
static int printable_ascii(PyObject *o) {
    if (!is_ascii_str(o))
        return 0;
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(o);
    for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(o); i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return 0;
    return 1;
}

static int put_text(Buf *b, PyObject *text) {
    if (reserve(b, PyUnicode_GET_LENGTH(text)) < 0)
        return -1;
    put_ascii(b, text);
    return 0;
}

static int put_chars(Buf *b, const char *s) {
    Py_ssize_t n = (Py_ssize_t)strlen(s);
    if (reserve(b, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        put(b, (Py_UCS1)s[i]);
    return 0;
}

static int put_int(Buf *b, long long v) {
    char digits[24];
    snprintf(digits, sizeof digits, "%lld", v);
    return put_chars(b, digits);
}

/* Spaces after what was put since `from`, to make it `w` wide (`str.ljust`) */
static int pad_from(Buf *b, Py_ssize_t from, Py_ssize_t w) {
    Py_ssize_t k = w - (b->n - from);
    if (k <= 0)
        return 0;
    if (reserve(b, k) < 0)
        return -1;
    put_run(b, ' ', k);
    return 0;
}

/* The ints `v` joined by `×`, with a space either side when `spaced` (`4×8`, `2 × 4`) */
static int put_times(Buf *b, const long long *v, Py_ssize_t n, int spaced) {
    for (Py_ssize_t d = 0; d < n; d++) {
        if (d) {
            if (reserve(b, 3) < 0)
                return -1;
            if (spaced)
                put(b, ' ');
            put(b, 0x00D7); /* × */
            if (spaced)
                put(b, ' ');
        }
        if (put_int(b, v[d]) < 0)
            return -1;
    }
    return 0;
}

/* The `a:b` ranges of a dim of `n` elements in `k` even shards, as a list of str */
static PyObject *even_range_list(long long n, long long k) {
    PyObject *out = PyList_New((Py_ssize_t)k);
    if (out == NULL)
        return NULL;
    long long c = n / k;
    for (long long i = 0; i < k; i++) {
        char text[48];
        int len = snprintf(text, sizeof text, "%lld:%lld", i * c, i * c + c);
        PyObject *r = PyUnicode_FromStringAndSize(text, len);
        if (r == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, r);
    }
    return out;
}

/* The `n` exact ints `args` as long longs in `out`: 0, or 1 when one is not such an int
 * (or does not fit) */
static int read_ints(PyObject *const *args, int n, long long *out) {
    for (int i = 0; i < n; i++) {
        int overflow = 0;
        if (!PyLong_CheckExact(args[i]))
            return 1;
        out[i] = PyLong_AsLongLongAndOverflow(args[i], &overflow);
        if (overflow || (out[i] == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 1;
        }
    }
    return 0;
}

/* Tiles along a dim, at most, of a picture drawn here (a summary's grid has at most 32
 * cells): past it the Python path decides, and no list of ranges is made that long */
#define MAX_DRAWN 4096
#define MAX_RANK 64

/* What a picture's header holds, read off a call's first six arguments (title, shape,
 * split, n, notes, tiles), and each dim's shard (`ok` 0: an argument the Python path must
 * judge) */
typedef struct {
    PyObject *title, *split, *notes;
    long long n;
    Py_ssize_t rank;
    long long dims[MAX_RANK], k_of[MAX_RANK], shard[MAX_RANK];
    int ok;
} Head;

/* The header: each dim of `shape` split evenly into its `tiles` (`even_ranges`), at most
 * MAX_DRAWN of them, every text printable ASCII */
static Head read_head(PyObject *const *args) {
    Head h;
    h.ok = 0;
    h.title = args[0];
    h.split = args[2];
    h.notes = args[4];
    PyObject *shape = args[1], *tiles = args[5];
    if (read_ints(args + 3, 1, &h.n) || !printable_ascii(h.title) ||
        !printable_ascii(h.split) || !PyTuple_Check(h.notes) || !PyTuple_Check(shape) ||
        !PyTuple_Check(tiles) || PyTuple_GET_SIZE(shape) == 0 ||
        PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(tiles) || PyTuple_GET_SIZE(shape) > MAX_RANK)
        return h;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(h.notes); i++)
        if (!printable_ascii(PyTuple_GET_ITEM(h.notes, i)))
            return h;
    h.rank = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t d = 0; d < h.rank; d++) {
        if (read_ints(&PyTuple_GET_ITEM(shape, d), 1, &h.dims[d]) ||
            read_ints(&PyTuple_GET_ITEM(tiles, d), 1, &h.k_of[d]) || h.dims[d] <= 0 ||
            h.k_of[d] <= 0 || h.k_of[d] > MAX_DRAWN || h.dims[d] % h.k_of[d])
            return h;
        h.shard[d] = h.dims[d] / h.k_of[d];
    }
    h.ok = 1;
    return h;
}

/* The header's lines (`_head_lines` without a legend): what is drawn, its shape, split and
 * devices, then its notes */
static int put_head(Buf *b, const Head *h) {
    if (put_text(b, h->title) < 0 || put_chars(b, "  shape ") < 0 ||
        put_times(b, h->dims, h->rank, 0) < 0 || put_chars(b, "  split ") < 0 ||
        put_text(b, h->split) < 0 || put_chars(b, "  ") < 0 || put_int(b, h->n) < 0 ||
        put_chars(b, h->n != 1 ? " devices\n" : " device\n") < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(h->notes); i++)
        if (put_text(b, PyTuple_GET_ITEM(h->notes, i)) < 0 || put_chars(b, "\n") < 0)
            return -1;
    return 0;
}

const char fs_whole_grid_text_doc[] =
    "whole_grid_text(title, shape, split, n, notes, tiles, grids, row_dim, col_dim, width,\n"
    "                min_label, min_cell) -> str, 0 or NotImplemented\n\n"
    "report.whole.whole_text of a compact picture without a legend of the tiling `tiles`\n"
    "over `n` devices (its notes `notes`) and `shape`, whose one grid (`grids`: the\n"
    "tiling's cells, `_WholeFacts.grids`) shows dim `row_dim` (-1: none) on rows and\n"
    "`col_dim` on columns; 0 when no grid fits `width` (a table instead: whole_table_text);\n"
    "NotImplemented wherever the Python path must decide (a dim not split evenly, text not\n"
    "printable ASCII, a grid the general path draws).";

PyObject *fs_whole_grid_text(PyObject *Py_UNUSED(self), PyObject *const *args,
                             Py_ssize_t nargs) {
    long long v[5]; /* row_dim, col_dim, width, min_label, min_cell */
    if (nargs != 12 || read_ints(args + 7, 5, v))
        Py_RETURN_NOTIMPLEMENTED;
    long long row_dim = v[0], col_dim = v[1];
    Head h = read_head(args);
    if (!h.ok || row_dim < -1 || row_dim >= h.rank || col_dim < 0 || col_dim >= h.rank ||
        row_dim == col_dim)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *rows = row_dim < 0 ? Py_NewRef(Py_None)
                                 : even_range_list(h.dims[row_dim], h.k_of[row_dim]);
    PyObject *cols = rows == NULL ? NULL : even_range_list(h.dims[col_dim], h.k_of[col_dim]);
    PyObject *result = NULL;
    Buf b = {NULL, 0, 0};
    if (cols == NULL || put_head(&b, &h) < 0)
        goto done;
    int drawn = draw_grids(&b, rows, cols, args[6], (Py_ssize_t)v[2], (Py_ssize_t)v[3],
                           (Py_ssize_t)v[4]);
    if (drawn == 0) /* (each of the grid's lines ends in a newline, its last too) */
        result = PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, b.s, b.n);
    else if (drawn == GRIDS_TABLE)
        result = PyLong_FromLong(0);
    else if (drawn > 0)
        result = Py_NewRef(Py_NotImplemented);
done:
    Py_XDECREF(rows);
    Py_XDECREF(cols);
    PyMem_Free(b.s);
    return result;
}

/* Digits of v */
static Py_ssize_t int_len(long long v) {
    char digits[24];
    return snprintf(digits, sizeof digits, "%lld", v);
}

/* The slices of the tile at `index` (`[a:b, c:d]`), the dims' shards `c` long */
static int put_slices(Buf *b, const long long *index, const long long *c, Py_ssize_t rank) {
    if (put_chars(b, "[") < 0)
        return -1;
    for (Py_ssize_t d = 0; d < rank; d++) {
        if ((d && put_chars(b, ", ") < 0) || put_int(b, index[d] * c[d]) < 0 ||
            put_chars(b, ":") < 0 || put_int(b, index[d] * c[d] + c[d]) < 0)
            return -1;
    }
    return put_chars(b, "]");
}

static const char *const TABLE_HEAD[] = {"tile", "devices", "slices", "shard", "buffer", "note"};

const char fs_whole_table_text_doc[] =
    "whole_table_text(title, shape, split, n, notes, tiles, starts, w_tile, w_devices, width)\n"
    "    -> str or NotImplemented\n\n"
    "report.whole.whole_text of a compact picture without a legend, of at most two dims,\n"
    "whose grid does not fit `width` (whole_grid_text's 0): the table of every tile, each\n"
    "row's first two cells drawn (`_TableFacts.starts`, the widest `w_tile`, `w_devices`).\n"
    "NotImplemented wherever the Python path must decide (cells to wrap, text not ASCII).";

PyObject *fs_whole_table_text(PyObject *Py_UNUSED(self), PyObject *const *args,
                              Py_ssize_t nargs) {
    long long v[3]; /* w_tile, w_devices, width */
    if (nargs != 10 || read_ints(args + 7, 3, v))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *starts = args[6];
    Head h = read_head(args);
    if (!h.ok || h.rank > 2 || !ascii_list(starts, -1))
        Py_RETURN_NOTIMPLEMENTED;
    long long tiles = 1;
    for (Py_ssize_t d = 0; d < h.rank; d++)
        tiles *= h.k_of[d]; /* (at most MAX_DRAWN squared) */
    if (PyList_GET_SIZE(starts) != tiles)
        Py_RETURN_NOTIMPLEMENTED;
    /* the columns' widths: the slices' longest (the last tile's ranges are the longest
     * along each dim), the shard's (every tile's shard and buffer) */
    Py_ssize_t w_slices = 2, w_shard = h.rank - 1; /* brackets; × between dims */
    for (Py_ssize_t d = 0; d < h.rank; d++) {
        w_slices += int_len(h.dims[d] - h.shard[d]) + 1 + int_len(h.dims[d]) + (d ? 2 : 0);
        w_shard += int_len(h.shard[d]);
    }
    Py_ssize_t widths[6] = {(Py_ssize_t)v[0], (Py_ssize_t)v[1], w_slices > 6 ? w_slices : 6,
                            w_shard > 5 ? w_shard : 5, w_shard > 6 ? w_shard : 6, 4};
    Py_ssize_t columns = 6, total = 3 * 5 + 2;
    for (int k = 0; k < 6; k++)
        total += widths[k];
    if (total > v[2]) { /* the buffer (the shard) and the note (none) left out */
        columns = 4;
        total -= widths[4] + widths[5] + 3 * 2;
        if (total > v[2])
            Py_RETURN_NOTIMPLEMENTED; /* (its cells wrapped: the Python path) */
    }
    PyObject *result = NULL;
    Buf b = {NULL, 0, 0};
    if (put_head(&b, &h) < 0 || put_int(&b, tiles) < 0 || put_chars(&b, " tiles (") < 0 ||
        put_times(&b, h.k_of, h.rank, 1) < 0 ||
        put_chars(&b, "); table instead of a grid (a grid is wider than the console)") < 0 ||
        (columns == 4 && put_chars(&b, "; every tile's buffer is its shard") < 0) ||
        put_chars(&b, "\n") < 0)
        goto done;
    /* a blank line, the columns' names, a rule */
    if (pad_from(&b, b.n, total) < 0 || put_chars(&b, "\n ") < 0)
        goto done;
    for (Py_ssize_t k = 0; k < columns; k++) {
        if (k && put_chars(&b, "   ") < 0)
            goto done;
        Py_ssize_t at = b.n;
        if (put_chars(&b, TABLE_HEAD[k]) < 0 || pad_from(&b, at, widths[k]) < 0)
            goto done;
    }
    if (put_chars(&b, " \n ") < 0 || reserve(&b, total) < 0)
        goto done;
    put_run(&b, BOX_H, total - 2);
    if (put_chars(&b, " \n") < 0)
        goto done;
    /* each tile's row, in row-major order: its first two cells, its slices, then the
     * shard and the buffer (both the shard) and an empty note, as many as there are */
    long long index[2] = {0, 0};
    for (Py_ssize_t t = 0; t < tiles; t++) {
        if (put_text(&b, PyList_GET_ITEM(starts, t)) < 0)
            goto done;
        Py_ssize_t at = b.n;
        if (put_slices(&b, index, h.shard, h.rank) < 0 || pad_from(&b, at, widths[2]) < 0)
            goto done;
        for (Py_ssize_t k = 3; k < columns; k++) {
            if (put_chars(&b, "   ") < 0)
                goto done;
            at = b.n;
            if ((k < 5 && put_times(&b, h.shard, h.rank, 0) < 0) ||
                pad_from(&b, at, widths[k]) < 0)
                goto done;
        }
        if (put_chars(&b, " \n") < 0)
            goto done;
        for (Py_ssize_t d = h.rank - 1; d >= 0; d--) { /* the next index */
            if (++index[d] < h.k_of[d])
                break;
            index[d] = 0;
        }
    }
    if (pad_from(&b, b.n, total) < 0 || put_chars(&b, "\n") < 0)
        goto done;
    result = PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, b.s, b.n);
done:
    PyMem_Free(b.s);
    return result;
}
