/* What the native sources of meshdiag.ir.fast._fastscan share. */
#ifndef MESHDIAG_FASTSCAN_H
#define MESHDIAG_FASTSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _fastscan.c: index after the bracket closing data[pos] (quotes skipped, `->` is no
 * bracket); -1 when the text ends first, -2 with a MemoryError set */
Py_ssize_t fs_match_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t pos);

/* _fields.c: the plain-line field readers of meshdiag/ir/fields.py */
PyObject *fs_constraint_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *fs_entry_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char fs_constraint_fields_doc[];
extern const char fs_entry_fields_doc[];

#endif
