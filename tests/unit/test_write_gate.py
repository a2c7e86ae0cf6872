"""A coordinated group's primary writes nothing past its lease (issue 30 §3): the store's write seam
refuses every write once the lease's end is reached — whoever writes (a send, a receive's in-flight
state, an ack, an offset, a background writer) — with HA_NOT_AVAILABLE, and a background writer's
refused step is not logged (said once, when the primary steps down)."""

from __future__ import annotations

import logging
import time

import pytest

from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store
from rockmq.store.disk_space import log_failure
from rockmq.store.schema import Family


def _write(store: Store, family: str = Family.OFFSETS) -> None:
    batch = store.batch()
    batch.put(family, b"k", b"v")
    store.write(batch)


def _lapsed() -> BrokerError:
    return BrokerError(pb.HA_NOT_AVAILABLE, "not the primary now")


def test_every_write_past_the_lease_is_refused_and_none_before(tmp_path):
    store = Store(tmp_path / "data")
    until = [time.monotonic() + 60]
    try:
        store.refuse_writes_after(lambda: until[0], _lapsed)
        for family in (Family.LOG, Family.OFFSETS, Family.CHECKPOINTS, Family.TIMERS, Family.DEDUP):
            _write(store, family)
        assert not store.refusing_writes
        until[0] = time.monotonic()  # the lease's end, read at each write
        for family in (Family.LOG, Family.OFFSETS, Family.CHECKPOINTS, Family.TIMERS, Family.DEDUP):
            with pytest.raises(BrokerError) as refused:
                _write(store, family)
            assert refused.value.code == pb.HA_NOT_AVAILABLE
        assert store.refusing_writes  # reads persist nothing they imply
        until[0] = time.monotonic() + 60  # renewed in time after all
        _write(store)
    finally:
        store.close()


def test_a_fenced_store_refuses_whatever_its_lease_says(tmp_path):
    store = Store(tmp_path / "data")
    try:
        store.refuse_writes_after(lambda: time.monotonic() + 60, _lapsed)
        store.refuse_writes(lambda: BrokerError(pb.HA_NOT_AVAILABLE, "fenced"))
        with pytest.raises(BrokerError, match="fenced"):
            _write(store)
        store.refuse_writes(None)
        _write(store)
    finally:
        store.close()


def test_a_background_writers_refused_step_is_not_logged(caplog):
    log = logging.getLogger("test_write_gate")
    with caplog.at_level(logging.ERROR):
        log_failure(log, _lapsed(), "timer step failed")
        assert not caplog.records
        log_failure(log, BrokerError(pb.INTERNAL_SERVER_ERROR, "boom"), "timer step failed")
        assert len(caplog.records) == 1
