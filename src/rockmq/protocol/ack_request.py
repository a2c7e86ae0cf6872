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
from rockmq.protocol.wire_reader import NotCanonical, Reader

if not cython.compiled:  # compiled, the .pxd cimports them as C constants
    from rockmq.protocol.wire_reader import DELIMITED

_REQUEST, _ENTRY = rpc.AckMessageRequest.DESCRIPTOR, rpc.AckMessageEntry.DESCRIPTOR
_GROUP = cython.declare(cython.int, number(_REQUEST, "group"))
_TOPIC = cython.declare(cython.int, number(_REQUEST, "topic"))
_ENTRIES = cython.declare(cython.int, number(_REQUEST, "entries"))
_NAMESPACE = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "resource_namespace"))
_NAME = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "name"))
_MESSAGE_ID = cython.declare(cython.int, number(_ENTRY, "message_id"))
_RECEIPT_HANDLE = cython.declare(cython.int, number(_ENTRY, "receipt_handle"))
_MESSAGE_ID_KEY, _RECEIPT_HANDLE_KEY = key(_ENTRY, "message_id"), key(_ENTRY, "receipt_handle")
# The reply's entry starts with the request entry's fields: same numbers, same types (a test pins it).
assert (key(rpc.AckMessageResultEntry.DESCRIPTOR, "message_id"), key(rpc.AckMessageResultEntry.DESCRIPTOR, "receipt_handle")) \
    == (_MESSAGE_ID_KEY, _RECEIPT_HANDLE_KEY)


class AckRequest(NamedTuple):
    group: str
    topic: str
    handles: list[str]
    entries: list[bytes]  # each entry's message_id and receipt_handle fields, encoded (proto3: empty ones left out)


@cython.locals(data=bytes, r=Reader, size=cython.Py_ssize_t, field=cython.int, start=cython.Py_ssize_t,
               stop=cython.Py_ssize_t)
def scan(data: bytes) -> AckRequest | None:
    """The request, or None when its bytes are not canonical (see the module's docstring)."""
    group = topic = ""
    handles: list[str] = []
    entries: list[bytes] = []
    r = Reader(data)
    size = len(data)
    field = 0
    try:
        while r.at < size:
            field = r.key(size, field, _ENTRIES)
            if r.wire != DELIMITED:
                return None
            stop = r.length(size)
            start = r.at
            if field == _ENTRIES:
                handles.append(r.second(stop, _MESSAGE_ID, _RECEIPT_HANDLE))
                entries.append(data[start:stop])
            elif field == _GROUP:
                group = r.second(stop, _NAMESPACE, _NAME)
            elif field == _TOPIC:
                topic = r.second(stop, _NAMESPACE, _NAME)
            else:
                return None
    except (NotCanonical, UnicodeDecodeError):
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
