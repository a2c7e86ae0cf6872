"""Delayed and transactional messages through `--port` of `rockmq serve --workers 2`, with the
official Python client: each lives on the shard that took it (its timer, its half message, the
check of an orphaned one over the producer's Telemetry session with that shard) and arrives as
from a single broker."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import config, make_message, producer, receive_until, send, simple_consumer  # noqa: E402
from rocketmq import Message, Producer, TransactionChecker, TransactionResolution  # noqa: E402
from shard_set import ShardSet  # noqa: E402

FAST_CHECKS = {"ROCKMQ_TXN_CHECK_FIRST_S": "1", "ROCKMQ_TXN_CHECK_INTERVAL_S": "1", "ROCKMQ_TXN_CHECK_MAX": "5"}


class CommitAll(TransactionChecker):
    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, message: Message) -> TransactionResolution:
        self.checked.append(message.message_id)
        return TransactionResolution.COMMIT


@pytest.fixture
def shards(tmp_path: Path):
    s = ShardSet(tmp_path / "data", 2, env=FAST_CHECKS).start()
    yield s
    s.kill()


def test_delayed_committed_and_orphaned_transactions_arrive_from_both_shards(shards):
    shards.cli("topic", "create", "kinds", "--queues", "8", check=True)
    checker = CommitAll()
    committed: set[str] = set()
    orphans: set[str] = set()
    p = Producer(config(shards.endpoint), ("kinds",), checker)
    p.startup()
    try:
        for i in range(8):  # consecutive sends alternate queues of the interleaved route: both shards
            txn = p.begin_transaction()
            m = make_message("kinds", f"txn-{i}".encode())
            p.send(m, txn)
            if i % 4 in (1, 2):  # one of each parity: on both shards
                orphans.add(m.message_id)  # never ended: the shard holding it asks the checker
            else:
                txn.commit()
                committed.add(m.message_id)
        due_ms = int(time.time() * 1000) + 2000
        with producer(shards.endpoint, "kinds") as dp:
            delayed = {send(dp, "kinds", f"later-{i}".encode(), delivery_timestamp=due_ms).message_id for i in range(8)}
        expected = committed | orphans | delayed
        with simple_consumer(shards.endpoint, "kinds-g", {"kinds": "*"}) as c:
            got = receive_until(c, lambda g: {m.message_id for m in g} >= expected, timeout=40)
            for m in got:
                c.ack(m)
    finally:
        p.shutdown()
    assert {m.message_id for m in got} == expected, f"missing {expected - {m.message_id for m in got}}"
    assert orphans <= set(checker.checked), "an orphaned transaction was not checked"
    stored = shards.stored_ids("kinds")
    for kind, ids in (("delayed", delayed), ("orphaned", orphans), ("committed", committed)):
        assert all(held & ids for held in stored.values()), f"{kind} messages were expected on both shards"
