"""A coordinated broker group (issue 30; broker/coordination/membership.py) on a real etcd and real
broker processes: the members start alike, one is elected primary with the group's epoch and the
others follow it; kill -9 the primary under sync replication and rockmq's producer sending, and the
most caught-up replica takes writes within the lease plus 3 s, holding every acknowledged message;
the killed member, restarted, rejoins as a replica."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from broker_process import BrokerProcess
from mqwire import held_ids
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.errors import RockmqError

LEASE_S = 3  # the default coordinator_lease_s
TOPIC, QUEUES = "failover", 4
REQUEST_TIMEOUT_S = 2.0


def _member(etcd, data: Path) -> BrokerProcess:
    broker = BrokerProcess(data, "--broker-name", "g1", "--replication", "sync", "--coordinator", etcd.url,
                           "--coordinator-lease", str(LEASE_S))
    broker.port = free_port()  # a member's endpoint is its name in the group: a fixed port
    return broker


def _primary(members: list[BrokerProcess]) -> BrokerProcess:
    """The member whose log says it is primary (its last role line names itself)."""
    def says() -> BrokerProcess | None:
        for m in members:
            roles = [line for line in list(m.log) if " is primary at epoch " in line]
            if m.proc is not None and roles and roles[-1].endswith("(this member)"):
                return m
        return None

    return wait_for(says, 15, what="a primary")


def test_members_elect_a_primary_and_after_its_kill_the_next_takes_every_acknowledged_write(etcd, tmp_path: Path):
    members = [_member(etcd, tmp_path / f"m{i}") for i in range(3)]
    try:
        for m in members:
            m.start()
        primary = _primary(members)
        replicas = [m for m in members if m is not primary]
        wait_for(lambda: all(f"replica of {primary.endpoint}" in "\n".join(r.log) for r in replicas), 15,
                 what="the others to follow the primary")
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        acked, first_write_s = asyncio.run(_send_through_the_kill(members, primary))
        print(f"\nfailover: the first write on the new primary {first_write_s:.2f} s after kill -9 "
              f"(lease {LEASE_S} s); {len(acked)} acknowledged")
        assert first_write_s < LEASE_S + 3
        survivors = [m for m in members if m is not primary]
        new = _primary(survivors)
        assert acked <= held_ids(new.endpoint, TOPIC, QUEUES), "an acknowledged message is not on the new primary"
        primary.start()  # the former primary rejoins as a replica of the new one
        wait_for(lambda: acked <= held_ids(primary.endpoint, TOPIC, QUEUES), 20, what="the former primary to catch up")
        assert f"replica of {new.endpoint}" in "\n".join(primary.log)
    finally:
        for m in members:
            m.kill()


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
