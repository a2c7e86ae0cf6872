# Cython reads this beside send_request.py: the shared reader's C type, and what this module's adds.
from rockmq.protocol.wire_reader cimport DELIMITED, INT32, INT64, VARINT, Reader

cdef class _Reader(Reader):
    cdef object timestamp(self, Py_ssize_t limit)
    cdef int digest(self, Py_ssize_t limit)
    cdef int entry(self, Py_ssize_t limit, object props)
    cdef object message(self, Py_ssize_t start, Py_ssize_t end, object whole)
