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

const char fs_grid_text_doc[] =
    "grid_text(row_ranges, col_ranges, grids, width, min_label, min_cell) -> str, 0 or None\n\n"
    "report.whole.grid_text_py with its two widths given; NotImplemented for inputs it does\n"
    "not expect (the twin then decides).";

PyObject *fs_grid_text(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *rows = args[0], *cols_list = args[1], *grids = args[2];
    Py_ssize_t width = PyLong_AsSsize_t(args[3]), min_label = PyLong_AsSsize_t(args[4]),
               min_cell = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (!ascii_list(cols_list, -1) || !PyList_Check(grids) || PyList_GET_SIZE(grids) == 0 ||
        (rows != Py_None && (!ascii_list(rows, -1) || PyList_GET_SIZE(rows) == 0)))
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t cols = PyList_GET_SIZE(cols_list), n_grids = PyList_GET_SIZE(grids);
    Py_ssize_t n_rows = rows == Py_None ? 1 : PyList_GET_SIZE(rows);
    if (cols == 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *const *col = &PyList_GET_ITEM(cols_list, 0);
    /* every grid: (title or None, cells) with cells[1] `n_rows` lists of `cols` texts and
     * cells[2] `cols` ints */
    for (Py_ssize_t g = 0; g < n_grids; g++) {
        PyObject *grid = PyList_GET_ITEM(grids, g), *cells, *texts, *widest;
        if (!PyTuple_Check(grid) || PyTuple_GET_SIZE(grid) != 2)
            Py_RETURN_NOTIMPLEMENTED;
        PyObject *title = PyTuple_GET_ITEM(grid, 0);
        cells = PyTuple_GET_ITEM(grid, 1);
        if ((title != Py_None && !is_ascii_str(title)) || !PyTuple_Check(cells) ||
            PyTuple_GET_SIZE(cells) < 3)
            Py_RETURN_NOTIMPLEMENTED;
        texts = PyTuple_GET_ITEM(cells, 1);
        widest = PyTuple_GET_ITEM(cells, 2);
        if (!PyList_Check(texts) || PyList_GET_SIZE(texts) != n_rows || !PyList_Check(widest) ||
            PyList_GET_SIZE(widest) != cols)
            Py_RETURN_NOTIMPLEMENTED;
        for (Py_ssize_t r = 0; r < n_rows; r++)
            if (!ascii_list(PyList_GET_ITEM(texts, r), cols))
                Py_RETURN_NOTIMPLEMENTED;
        for (Py_ssize_t c = 0; c < cols; c++)
            if (!PyLong_CheckExact(PyList_GET_ITEM(widest, c)))
                Py_RETURN_NOTIMPLEMENTED;
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
    PyObject *result = NULL;
    Buf b = {NULL, 0, 0};
    Py_ssize_t *natural = PyMem_Malloc((size_t)(n_grids * cols + cols) * sizeof(Py_ssize_t));
    if (natural == NULL)
        return PyErr_NoMemory();
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
        result = narrow * cols > room || widest_range + 2 > narrow ? PyLong_FromLong(0)
                                                                   : Py_NewRef(Py_None);
        goto done;
    }
    for (Py_ssize_t g = 0; g < n_grids; g++) {
        PyObject *grid = PyList_GET_ITEM(grids, g), *title = PyTuple_GET_ITEM(grid, 0);
        PyObject *texts = PyTuple_GET_ITEM(PyTuple_GET_ITEM(grid, 1), 1);
        if (title != Py_None && PyUnicode_GET_LENGTH(title) > 0) {
            if (reserve(&b, PyUnicode_GET_LENGTH(title) + 1) < 0)
                goto done;
            put_ascii(&b, title);
            put(&b, '\n');
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
        if (put_rule(&b, BOX_TL, BOX_TT, BOX_TR, widths, cols) < 0)
            goto done;
        for (Py_ssize_t r = 0; r < n_rows; r++) {
            if (r && put_rule(&b, BOX_LT, BOX_X, BOX_RT, widths, cols) < 0)
                goto done;
            PyObject *row_texts = PyList_GET_ITEM(texts, r);
            PyObject *a = rows == Py_None ? NULL : PyList_GET_ITEM(rows, r);
            if (put_row(&b, &PyList_GET_ITEM(row_texts, 0), NULL, col, widths, cols, 0) < 0 ||
                put_row(&b, NULL, a, col, widths, cols, 1) < 0)
                goto done;
        }
        if (put_rule(&b, BOX_BL, BOX_BT, BOX_BR, widths, cols) < 0)
            goto done;
    }
    /* the lines joined: no newline after the last */
    result = PyUnicode_FromKindAndData(PyUnicode_2BYTE_KIND, b.s, b.n - 1);
done:
    PyMem_Free(natural);
    PyMem_Free(b.s);
    return result;
}
