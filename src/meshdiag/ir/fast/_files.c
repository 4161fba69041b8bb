/* A small regular file read whole in C: the twin of `ir.scan.read_small_file_py`.
 *
 * An every-pass dump is tens of thousands of small files. Read through `os.stat`, `os.open`,
 * `os.fstat`, `os.read` and `os.close`, one took 6-8 us on the cold bench (39,519 files),
 * of which the system calls are about 3.5 us: the rest was the Python calls and the stat
 * results they build. The calls here are the twin's, in its order, with its answers: the
 * path is stat'ed before it is opened (a named pipe is never opened: its writer would lose
 * what it sent) unless the caller says a directory walk found it a regular file already
 * (`walked`: its entry's type said so; that stat was a tenth of the system time of a cold
 * dump's `inspect`), the open file is stat'ed again (it may have been replaced meanwhile),
 * one byte more than its size is asked for (a file that grew is streamed instead), and any
 * error reading it is None (its scan opens it again and says why).
 */
#include "_fastscan.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

const char fs_read_small_doc[] =
    "read_small(path, limit, walked=False) -> bytes | None: see\n"
    "meshdiag.ir.scan.read_small_file_py";

/* read(2) into buf[got:want] until `size` bytes are in, the file ends or it fails; the
 * GIL is released meanwhile and taken back on EINTR to run signal handlers (-2 with their
 * error set), like os.read. The bytes read, or -1 on an error of the read. */
static Py_ssize_t read_in(int fd, char *buf, Py_ssize_t size, Py_ssize_t want) {
    Py_ssize_t got = 0;
    for (;;) {
        ssize_t r;
        int err = 0;
        Py_BEGIN_ALLOW_THREADS
        r = read(fd, buf + got, (size_t)(want - got));
        if (r < 0)
            err = errno;
        Py_END_ALLOW_THREADS
        if (r < 0) {
            if (err != EINTR)
                return -1;
            if (PyErr_CheckSignals() < 0)
                return -2;
            continue;
        }
        if (r == 0)
            return got; /* it shrank meanwhile: what is there */
        got += r;
        if (got >= size)
            return got; /* all of it, or more: the caller tells */
    }
}

PyObject *fs_read_small(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "read_small(path, limit, walked=False)");
        return NULL;
    }
    long long limit = PyLong_AsLongLong(args[1]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    int walked = nargs == 3 ? PyObject_IsTrue(args[2]) : 0;
    if (walked < 0)
        return NULL;
    PyObject *enc = NULL;
    if (!PyUnicode_FSConverter(args[0], &enc)) /* embedded NUL: ValueError, as os.stat */
        return NULL;
    const char *path = PyBytes_AS_STRING(enc);
    struct stat st;
    int fd = -1, ok;
    Py_BEGIN_ALLOW_THREADS
    ok = walked ||
         (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (long long)st.st_size <= limit);
    if (ok) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             (long long)st.st_size <= limit;
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(enc);
    if (!ok) {
        if (fd >= 0)
            close(fd);
        Py_RETURN_NONE;
    }
    Py_ssize_t size = (Py_ssize_t)st.st_size;
    PyObject *out = PyBytes_FromStringAndSize(NULL, size + 1);
    if (out == NULL) {
        close(fd);
        return NULL;
    }
    Py_ssize_t got = read_in(fd, PyBytes_AS_STRING(out), size, size + 1);
    close(fd);
    if (got == -2) {
        Py_DECREF(out);
        return NULL;
    }
    if (got < 0 || got > size) { /* a read failed, or it grew meanwhile: streamed instead */
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, got) < 0)
        return NULL;
    return out;
}
