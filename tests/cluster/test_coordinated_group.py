"""A coordinated broker group (issue 30; broker/coordination/membership.py) on a real etcd and real
broker processes: the members start alike, one is elected primary with the group's epoch and the
others follow it; kill -9 the primary under sync replication and rockmq's producer sending, and the
most caught-up replica takes writes within the lease plus 3 s, holding every acknowledged message;
the killed member, restarted, rejoins as a replica."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess
from coordinated_group import LEASE_S, in_sync_joined, running_group, serving_primary
from mqwire import RPC_TIMEOUT, Conn, held_ids, message
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.errors import RockmqError
from rockmq.protocol import pb

TOPIC, QUEUES = "failover", 4
REQUEST_TIMEOUT_S = 2.0


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


def test_a_primary_paused_past_its_lease_takes_no_write_after_it_and_rejoins_as_a_replica(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        old = serving_primary(members)
        old.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(old)
        conn = Conn(old.endpoint)
        acked = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(20)))}
        assert old.proc is not None
        old.proc.send_signal(signal.SIGSTOP)
        paused = message(TOPIC, "sent to the paused primary")
        replies: list[object] = []
        sender = threading.Thread(target=lambda: replies.append(_reply(conn, paused)))
        sender.start()  # waits in the paused primary's socket
        new = serving_primary([m for m in members if m is not old])
        acked |= {r.message_id for r in asyncio.run(_sends(new.endpoint, 20))}
        old.proc.send_signal(signal.SIGCONT)
        sender.join(RPC_TIMEOUT + 5)
        assert replies and replies[0] != pb.OK, "the paused primary acknowledged a write after its lease"
        wait_for(lambda: f"replica of {new.endpoint}" in "\n".join(old.log), 15, what="the former primary to follow")
        assert any("stepping down from primary" in line for line in old.log)
        wait_for(lambda: acked <= held_ids(old.endpoint, TOPIC, QUEUES), 20, what="the former primary to catch up")
        assert paused.system_properties.message_id not in held_ids(new.endpoint, TOPIC, QUEUES)
        conn.close()


def _reply(conn: Conn, msg: pb.Message) -> object:
    """A send's status code, or the gRPC error's."""
    try:
        return conn.send(msg).status.code
    except grpc.RpcError as e:
        return e.code()


async def _sends(endpoint: str, n: int) -> list:
    async with AsyncProducer(endpoint, request_timeout=REQUEST_TIMEOUT_S) as producer:
        return [await producer.send(Message(TOPIC, f"new-{i}".encode())) for i in range(n)]


@pytest.mark.parametrize("where", [("--port", "0"), ("--host", "0.0.0.0", "--port", "free")])
def test_a_member_without_an_endpoint_the_others_reach_is_refused_in_one_line(tmp_path: Path, where: tuple[str, ...]):
    where = tuple(str(free_port()) if w == "free" else w for w in where)
    done = subprocess.run([sys.executable, "-m", "rockmq", "serve", "--data-dir", str(tmp_path), "--broker-name", "g1",
                           "--replication", "sync", "--coordinator", "etcd://127.0.0.1:1", *where],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    refusals = [line for line in done.stderr.splitlines() if line.startswith("rockmq: ")]
    assert refusals == ["rockmq: with --coordinator give a fixed --port and the --host the other members reach: a "
                        "member's HOST:PORT is its name in the group"], done.stderr


def test_a_lagging_replica_leaves_the_in_sync_set_and_is_not_elected_until_an_in_sync_member_is_back(etcd, tmp_path):
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        lagging, in_sync = (m for m in members if m is not primary)
        assert lagging.proc is not None
        lagging.proc.send_signal(signal.SIGSTOP)
        conn = Conn(primary.endpoint)
        acked = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(20)))}  # without it
        conn.close()
        assert any(f"['{lagging.endpoint}'] left the in-sync set" in line for line in primary.log)
        primary.kill()
        in_sync.kill()
        lagging.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: any("no member of the in-sync set" in line for line in lagging.log), LEASE_S * 3,
                 what="the lagging replica to see nobody it may elect")
        assert not any("took the primary role" in line for line in lagging.log)
        in_sync.start()  # an in-sync member back: it is elected, and the lagging one follows it
        assert serving_primary(members) is in_sync
        wait_for(lambda: f"replica of {in_sync.endpoint}" in "\n".join(lagging.log), 15, what="the lagging one to follow")
        assert acked <= held_ids(in_sync.endpoint, TOPIC, QUEUES)
        wait_for(lambda: acked <= held_ids(lagging.endpoint, TOPIC, QUEUES), 20, what="the lagging one to catch up")
