"""An AckMessageRequest read from its received bytes, without protobuf objects: the group, the
topic, each entry's receipt handle, and each entry's fields as they came, which begin the reply's
entry (AckMessageResultEntry numbers message_id and receipt_handle as AckMessageEntry does, so
the reply echoes them without encoding them again).

`scan` reads the canonical encoding only — fields in number order, each once (entries repeated),
minimal varints, valid UTF-8, no field it does not know (an entry's lite_topic included) — which
is what protobuf serializers write; for anything else it gives None and `read` parses the request
with protobuf (ValueError for malformed bytes), as it does whenever the module runs as Python.
Either way the result, and the reply built from it, are the same bytes.
"""

from __future__ import annotations

from typing import NamedTuple

import cython
from google.protobuf.message import DecodeError

from rockmq.protocol import pb, rpc
from rockmq.protocol.field_keys import key, number
from rockmq.protocol.wire import delimited

_REQUEST, _ENTRY = rpc.AckMessageRequest.DESCRIPTOR, rpc.AckMessageEntry.DESCRIPTOR
_GROUP = cython.declare(cython.int, number(_REQUEST, "group"))
_TOPIC = cython.declare(cython.int, number(_REQUEST, "topic"))
_ENTRIES = cython.declare(cython.int, number(_REQUEST, "entries"))
_NAMESPACE = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "resource_namespace"))
_NAME = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "name"))
_MESSAGE_ID = cython.declare(cython.int, number(_ENTRY, "message_id"))
_RECEIPT_HANDLE = cython.declare(cython.int, number(_ENTRY, "receipt_handle"))
_MESSAGE_ID_KEY, _RECEIPT_HANDLE_KEY = key(_ENTRY, "message_id"), key(_ENTRY, "receipt_handle")
_DELIMITED = cython.declare(cython.int, 2)
# The reply's entry starts with the request entry's fields: same numbers, same types (a test pins it).
assert (key(rpc.AckMessageResultEntry.DESCRIPTOR, "message_id"), key(rpc.AckMessageResultEntry.DESCRIPTOR, "receipt_handle")) \
    == (_MESSAGE_ID_KEY, _RECEIPT_HANDLE_KEY)


class AckRequest(NamedTuple):
    group: str
    topic: str
    handles: list[str]
    entries: list[bytes]  # each entry's message_id and receipt_handle fields, encoded (proto3: empty ones left out)


class _NotCanonical(Exception):
    """Bytes `scan` does not read: `read` parses them with protobuf."""


@cython.cclass
class _Reader:
    """A cursor over the request's bytes; `field` reads a length-delimited field within a limit."""

    # C fields (declared: the build reads no annotation)
    data = cython.declare(bytes)
    at = cython.declare(cython.Py_ssize_t)
    start = cython.declare(cython.Py_ssize_t)  # where the value of the field read last starts
    end = cython.declare(cython.Py_ssize_t)  # and where it ends

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = self.start = self.end = 0

    @cython.cfunc
    @cython.returns(cython.ulonglong)  # the build reads no annotation: argument and result types are declared
    @cython.locals(limit=cython.Py_ssize_t, value=cython.ulonglong, shift=cython.int, b=cython.uchar, first=cython.Py_ssize_t)
    def varint(self, limit: cython.Py_ssize_t) -> cython.ulonglong:
        """The minimal varint (below 2**31) at `at`, which moves past it."""
        value = 0
        shift = 0
        first = self.at
        while True:
            if self.at >= limit or shift > 28:
                raise _NotCanonical
            b = self.data[self.at]
            self.at += 1
            value |= cython.cast(cython.ulonglong, b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
        if (b == 0 and self.at - first > 1) or value > 0x7FFFFFFF:
            raise _NotCanonical
        return value

    @cython.cfunc
    @cython.returns(cython.int)
    @cython.locals(limit=cython.Py_ssize_t, tag=cython.ulonglong, n=cython.Py_ssize_t)
    def field(self, limit: cython.Py_ssize_t) -> cython.int:
        """The length-delimited field at `at` -> its number; its value is `data[start:end]`, `at` moves to `end`."""
        tag = self.varint(limit)
        if tag & 7 != _DELIMITED:
            raise _NotCanonical
        n = cython.cast(cython.Py_ssize_t, self.varint(limit))
        if n > limit - self.at:
            raise _NotCanonical
        self.start = self.at
        self.end = self.at = self.at + n
        return cython.cast(cython.int, tag >> 3)

    @cython.cfunc
    @cython.returns(str)
    @cython.locals(limit=cython.Py_ssize_t, first=cython.int, second=cython.int, field=cython.int, last=cython.int)
    def second_string(self, limit: cython.Py_ssize_t, first: cython.int, second: cython.int) -> str:
        """A message of two string fields up to `limit` (a Resource: namespace, name; an
        AckMessageEntry: message id, receipt handle) -> its second ("" if absent); the first,
        which the broker does not use, is only checked (protobuf refuses invalid UTF-8 too)."""
        value = ""
        last = 0
        while self.at < limit:
            field = self.field(limit)
            if field <= last or (field != first and field != second) or self.start == self.end:
                raise _NotCanonical
            last = field
            text = self.data[self.start:self.end].decode()
            if field == second:
                value = text
        return value


@cython.locals(data=bytes, r=_Reader, size=cython.Py_ssize_t, field=cython.int, last=cython.int, start=cython.Py_ssize_t,
               stop=cython.Py_ssize_t)
def scan(data: bytes) -> AckRequest | None:
    """The request, or None when its bytes are not canonical (see the module's docstring)."""
    group = topic = ""
    handles: list[str] = []
    entries: list[bytes] = []
    r = _Reader(data)
    size = len(data)
    last = 0
    try:
        while r.at < size:
            field = r.field(size)
            if field < last or (field == last and field != _ENTRIES):
                return None
            last = field
            start, stop = r.start, r.end
            r.at = start
            if field == _ENTRIES:
                handles.append(r.second_string(stop, _MESSAGE_ID, _RECEIPT_HANDLE))
                entries.append(data[start:stop])
            elif field == _GROUP:
                group = r.second_string(stop, _NAMESPACE, _NAME)
            elif field == _TOPIC:
                topic = r.second_string(stop, _NAMESPACE, _NAME)
            else:
                return None
    except (_NotCanonical, UnicodeDecodeError):
        return None
    return AckRequest(group, topic, handles, entries)


def read(data: bytes) -> AckRequest:
    """The request `data` encodes; ValueError if it is not an AckMessageRequest. Run as Python,
    the scan is slower than protobuf's C parse (~30x per entry): only the compiled build scans."""
    scanned = scan(data) if cython.compiled else None
    if scanned is not None:
        return scanned
    try:
        request = rpc.AckMessageRequest.FromString(data)
    except DecodeError as e:
        raise ValueError(f"malformed AckMessageRequest: {e}") from None
    return AckRequest(request.group.name, request.topic.name, [e.receipt_handle for e in request.entries],
                      [_string(_MESSAGE_ID_KEY, e.message_id) + _string(_RECEIPT_HANDLE_KEY, e.receipt_handle)
                       for e in request.entries])


def _string(field: bytes, value: str) -> bytes:
    return delimited(field, value.encode()) if value else b""  # proto3 leaves an empty string out
