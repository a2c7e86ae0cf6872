"""Framed entries and the replication op log built on them: round trips, and truncated or
unknown input refused with ValueError (a replica must never apply half a batch)."""

from __future__ import annotations

import struct

import pytest

from rockmq.store import framing, oplog

OPS = [(oplog.PUT, "log", b"k1", b"v" * 300), (oplog.DELETE, "timers", b"k2", b""),
       (oplog.DELETE_RANGE, "txn", b"a", b"b"), (oplog.PUT, "meta", b"", b"")]


def test_op_log_round_trip():
    assert oplog.decode(oplog.encode(OPS)) == OPS
    assert oplog.decode(b"") == []


@pytest.mark.parametrize("cut", [1, 5, 8, 12, 20])
def test_truncated_op_log_is_refused(cut):
    data = oplog.encode(OPS[:1])
    with pytest.raises(ValueError):
        oplog.decode(data[:-cut])


def test_unknown_operation_or_family_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        oplog.decode(bytes([7, 0]) + bytes(8))
    with pytest.raises(ValueError, match="unknown"):
        oplog.decode(bytes([0, 200]) + bytes(8))


def test_entries_start_where_asked():
    head = struct.Struct(">HB")
    data = b"xy" + head.pack(9, 2) + b"id" + framing.LEN.pack(3) + b"abc" + head.pack(1, 0) + framing.LEN.pack(0)
    assert list(framing.entries(data, head, 2)) == [((9, 2), b"id", b"abc"), ((1, 0), b"", b"")]
