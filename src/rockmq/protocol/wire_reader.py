"""Reading protobuf's canonical encoding from bytes: the primitives the request scans
(protocol/send_request.py, protocol/ack_request.py) share, compiled with them.

A `Reader` reads only what protobuf serializers write — fields in number order (a repeated one
together), minimal varints, valid UTF-8, proto3 defaults left out — and raises `NotCanonical` (or
UnicodeDecodeError) for anything else; a scan then answers None and its caller parses the bytes
with protobuf. Its C declarations are in wire_reader.pxd (the signatures below repeat them: Cython checks they
agree), which the scans' .pxd files cimport.
"""

from __future__ import annotations

import cython

if not cython.compiled:  # compiled, these are the C constants of wire_reader.pxd (a module cimports them from there)
    VARINT, DELIMITED = 0, 2  # wire types
    INT32, INT64 = 0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF  # the largest values of protobuf's int32 and int64


class NotCanonical(Exception):
    """Bytes a scan does not read (malformed, or not the canonical encoding): the caller parses them with protobuf."""


@cython.cclass
class Reader:
    """A cursor (`at`) over `data`; every read checks it stays within the `limit` it is given."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0
        self.wire = 0

    @cython.cfunc
    @cython.final
    @cython.returns(cython.ulonglong)
    @cython.locals(limit=cython.Py_ssize_t, most=cython.ulonglong, value=cython.ulonglong, shift=cython.int, b=cython.uchar,
                   start=cython.Py_ssize_t)
    def varint(self, limit: int, most: int) -> int:
        """A minimally encoded varint of at most `most`."""
        value = 0
        shift = 0
        start = self.at
        while True:
            if self.at >= limit or shift > 56:
                raise NotCanonical
            b = self.data[self.at]
            self.at += 1
            value |= cython.cast(cython.ulonglong, b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        if (b == 0 and self.at - start > 1) or value > most:
            raise NotCanonical
        return value

    @cython.cfunc
    @cython.final
    @cython.returns(cython.Py_ssize_t)
    @cython.locals(limit=cython.Py_ssize_t, n=cython.Py_ssize_t)
    def length(self, limit: int) -> int:
        """A length-delimited field's length -> the position its value ends at (the value starts at `at`)."""
        n = cython.cast(cython.Py_ssize_t, self.varint(limit, INT32))
        if n > limit - self.at:
            raise NotCanonical
        return self.at + n

    @cython.cfunc
    @cython.final
    @cython.returns(str)
    @cython.locals(limit=cython.Py_ssize_t, nonempty=cython.bint, end=cython.Py_ssize_t, start=cython.Py_ssize_t)
    def text(self, limit: int, nonempty: bool) -> str:
        """A string field's value (its key read); `nonempty`: where proto3 leaves an empty one out."""
        end = self.length(limit)
        start = self.at
        if nonempty and end == start:
            raise NotCanonical
        self.at = end
        return self.data[start:end].decode("utf-8")  # invalid UTF-8 raises: protobuf refuses it too

    @cython.cfunc
    @cython.final
    @cython.returns(cython.int)
    @cython.locals(limit=cython.Py_ssize_t, last=cython.int, repeated=cython.int, tag=cython.ulonglong, field=cython.int)
    def key(self, limit: int, last: int, repeated: int) -> int:
        """The next field's number (its wire type checked by the caller through `wire`); it must
        follow `last`, or repeat it when it is `repeated`."""
        tag = self.varint(limit, INT32)
        field = cython.cast(cython.int, tag >> 3)
        if field < last or (field == last and field != repeated) or field == 0:
            raise NotCanonical
        self.wire = cython.cast(cython.int, tag & 7)
        return field

    @cython.cfunc
    @cython.final
    @cython.returns(cython.int)
    @cython.locals(wire=cython.int)
    def expect(self, wire: int) -> int:
        """Refuses the field `key` read last unless its wire type is `wire`."""
        if self.wire != wire:
            raise NotCanonical
        return 0

    @cython.cfunc
    @cython.final
    @cython.returns(str)
    @cython.locals(limit=cython.Py_ssize_t, first=cython.int, wanted=cython.int, field=cython.int, value=str)
    def second(self, limit: int, first: int, wanted: int) -> str:
        """A message of two string fields up to `limit` (a Resource: namespace, name; an
        AckMessageEntry: message id, receipt handle) -> its second ("" if absent); the first,
        which the broker does not use, is only checked (protobuf refuses invalid UTF-8 too)."""
        value = ""
        field = 0
        while self.at < limit:
            field = self.key(limit, field, 0)
            if self.wire != DELIMITED:
                raise NotCanonical
            if field == wanted:
                value = self.text(limit, True)
            elif field == first:
                self.text(limit, True)
            else:
                raise NotCanonical
        return value
