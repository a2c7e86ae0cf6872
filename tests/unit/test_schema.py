"""The storage schema's stable parts: family ids are the replication wire format (a primary and a
replica of different releases must agree on them), so they are pinned here and never change."""

from __future__ import annotations

from rockmq.store import oplog
from rockmq.store.schema import SCHEMA_VERSION, Family

PINNED = {"meta": 0, "log": 1, "offsets": 2, "inflight": 3, "checkpoints": 4, "retry": 5, "timers": 6, "dedup": 7,
          "txn": 8, "txnchecks": 9, "matches": 10, "staging": 11, "footprints": 12, "index": 13, "trace": 14,
          "lite": 15}


def test_family_ids_are_pinned() -> None:
    assert {str(f): f.id for f in Family} == PINNED


def test_op_log_names_families_by_id() -> None:
    """rockmq 0.1.0 wrote the family's index in its FAMILIES tuple: the same numbers."""
    assert oplog.encode([(oplog.PUT, "staging", b"k", b"v")])[:2] == bytes([oplog.PUT, 11])
    assert oplog.decode(bytes([oplog.DELETE, 8, 0, 0, 0, 1]) + b"k" + bytes(4)) == [(oplog.DELETE, "txn", b"k", b"")]


def test_schema_version() -> None:
    # 1: rockmq 0.1.0 (staging inside txn); 2: staging has its own family; 3: one POP checkpoint per receive
    assert SCHEMA_VERSION == 3
