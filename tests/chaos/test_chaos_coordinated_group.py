"""A coordinated broker group's slower cases (issue 30; real etcd, real broker processes), beside the
ones in tests/cluster/test_coordinated_group.py: kill -9 the primary under sync replication with
rockmq's producer sending, and the most caught-up replica takes writes within the lease plus 3 s,
holding every acknowledged message, the killed member rejoining as a replica; a lagging replica is not
elected until an in-sync member is back, which is, and the lagging one follows and catches up."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from chaos_scale import FULL
from coordinated_group import LEASE_S, in_sync_joined, lagging_behind, running_group, serving_primary, strand
from mqwire import held_ids
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.errors import RockmqError

TOPIC, QUEUES = "failover", 4
REQUEST_TIMEOUT_S = 2.0

pytestmark = pytest.mark.skipif(not FULL, reason="scripts/chaos only (CI: tests/cluster)")


def test_members_elect_a_primary_and_after_its_kill_the_next_takes_every_acknowledged_write(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        replicas = [m for m in members if m is not primary]
        wait_for(lambda: all(f"replica of {primary.endpoint}" in "\n".join(r.log) for r in replicas), 15,
                 what="the others to follow the primary")
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        acked, first_write_s = asyncio.run(_send_through_the_kill(members, primary))
        print(f"\nfailover: the first write on the new primary {first_write_s:.2f} s after kill -9 "
              f"(lease {LEASE_S} s); {len(acked)} acknowledged")
        assert first_write_s < LEASE_S + 3
        survivors = [m for m in members if m is not primary]
        new = serving_primary(survivors)
        assert acked <= held_ids(new.endpoint, TOPIC, QUEUES), "an acknowledged message is not on the new primary"
        primary.start()  # the former primary rejoins as a replica of the new one
        wait_for(lambda: acked <= held_ids(primary.endpoint, TOPIC, QUEUES), 20, what="the former primary to catch up")
        assert f"replica of {new.endpoint}" in "\n".join(primary.log)


async def _send_through_the_kill(members: list[BrokerProcess], primary: BrokerProcess) -> tuple[set[str], float]:
    """Sends before and after kill -9 of the primary -> (the ids acknowledged, seconds from the kill to
    the first acknowledged send)."""
    endpoints = ",".join(m.endpoint for m in members)
    acked: set[str] = set()
    async with AsyncProducer(endpoints, request_timeout=REQUEST_TIMEOUT_S) as producer:
        for i in range(50):
            acked.add((await producer.send(Message(TOPIC, f"before-{i}".encode()))).message_id)
        killed = time.monotonic()
        primary.kill()
        first = 0.0
        deadline = killed + LEASE_S + 10
        while len(acked) < 100 and time.monotonic() < deadline:
            try:
                acked.add((await producer.send(Message(TOPIC, f"after-{len(acked)}".encode()))).message_id)
            except RockmqError:
                await asyncio.sleep(0.05)
                continue
            first = first or time.monotonic() - killed
    assert len(acked) == 100, "the new primary took no writes"
    return acked, first


def test_a_lagging_replica_leaves_the_in_sync_set_and_is_not_elected_until_an_in_sync_member_is_back(etcd, tmp_path):
    with running_group(etcd.url, tmp_path) as members:
        primary, lagging, in_sync, acked = lagging_behind(members, TOPIC, QUEUES)
        assert any(f"['{lagging.endpoint}'] left the in-sync set" in line for line in primary.log)
        strand(primary, lagging, in_sync)
        assert not any("took the primary role" in line for line in lagging.log)
        in_sync.start()  # an in-sync member back: it is elected, and the lagging one follows it
        assert serving_primary(members) is in_sync
        wait_for(lambda: f"replica of {in_sync.endpoint}" in "\n".join(lagging.log), 15, what="the lagging one to follow")
        assert acked <= held_ids(in_sync.endpoint, TOPIC, QUEUES)
        wait_for(lambda: acked <= held_ids(lagging.endpoint, TOPIC, QUEUES), 20, what="the lagging one to catch up")
