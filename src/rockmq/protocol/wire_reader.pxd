# C declarations of wire_reader.py (Cython reads them when it compiles it, and when a module cimports Reader).

cimport cython

cdef enum:  # wire types
    VARINT = 0
    DELIMITED = 2
cdef const unsigned long long INT32 = 0x7FFFFFFF, INT64 = 0x7FFFFFFFFFFFFFFF

cdef class Reader:
    cdef bytes data
    cdef Py_ssize_t at
    cdef int wire  # the wire type of the field `key` read last

    @cython.final
    cdef unsigned long long varint(self, Py_ssize_t limit, unsigned long long most)
    @cython.final
    cdef Py_ssize_t length(self, Py_ssize_t limit)
    @cython.final
    cdef str text(self, Py_ssize_t limit, bint nonempty)
    @cython.final
    cdef int key(self, Py_ssize_t limit, int last, int repeated)
    @cython.final
    cdef int expect(self, int wire)
    @cython.final
    cdef str second(self, Py_ssize_t limit, int first, int wanted)
