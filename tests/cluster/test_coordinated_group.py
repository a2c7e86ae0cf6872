"""A coordinated broker group (issue 30; broker/coordination/membership.py) on a real etcd and real
broker processes: a primary paused past its lease takes no write after it and rejoins as a replica;
a member others cannot reach is refused; a two-member group elects its survivor; the in-sync set
under async replication and a removal etcd does not answer; a replica behind the member elected
caught up from its footprints. (kill -9 of the primary under load:
test_coordinated_clients.py and, a few rounds, tests/chaos/test_chaos_coordinated_failover.py; the
slower cases: tests/chaos/test_chaos_coordinated_group.py.)"""

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
from coordinated_group import LEASE_S, in_sync_joined, lagging_behind, member, running_group, serving_primary
from mqwire import RPC_TIMEOUT, Conn, held_ids, message
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.protocol import pb

TOPIC, QUEUES = "failover", 4
REQUEST_TIMEOUT_S = 2.0


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


def test_a_two_member_groups_survivor_is_elected_again_after_a_fast_restart_and_a_third_member_joins_its_set(
        etcd, tmp_path: Path):
    """The primary stays in its group's in-sync set (it holds everything it acknowledged): the survivor
    of a two-member group, elected after kill -9 of the primary, is the set's only member; restarted at
    once (its earlier run's primary key not lapsed: not taken for its own), it is elected again; a third
    member then follows it and enters the set beside it."""
    with running_group(etcd.url, tmp_path, size=2) as members:
        first = serving_primary(members)
        in_sync_joined(first, replicas=1)
        survivor = next(m for m in members if m is not first)
        first.kill()
        assert serving_primary([survivor]) is survivor
        wait_for(lambda: f"primary with in-sync set ['{survivor.endpoint}']" in "\n".join(survivor.log), 10,
                 what="the survivor to keep itself, and not the dead primary, in the set")
        survivor.kill()
        survivor.start()
        wait_for(lambda: "took the primary role at epoch 3" in "\n".join(survivor.log), LEASE_S * 4,
                 what="the restarted survivor to be elected again")
        assert serving_primary([survivor]) is survivor
        third = member(etcd.url, tmp_path / "m2")
        members.append(third)  # killed after, with the others
        third.start()
        now = sorted([survivor.endpoint, third.endpoint])
        wait_for(lambda: f"{third.endpoint} joined the in-sync set: now {now}" in "\n".join(survivor.log), 20,
                 what="the third member to enter the set beside the primary")
        survivor.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        conn = Conn(survivor.endpoint)
        acked = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(5)))}
        conn.close()
        wait_for(lambda: acked <= held_ids(third.endpoint, TOPIC, QUEUES), 10, what="the third member to hold them")


def test_under_async_replication_a_paused_replica_leaves_the_in_sync_set(etcd, tmp_path: Path):
    """Async sends wait for nobody, so no send drops a lagging member: the primary's own look at each
    member's lag (the age of the first batch it has not applied) does."""
    with running_group(etcd.url, tmp_path, 3, "--replication", "async") as members:  # the later flag wins
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        paused = next(m for m in members if m is not primary)
        assert paused.proc is not None
        paused.proc.send_signal(signal.SIGSTOP)
        conn = Conn(primary.endpoint)
        conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(5)))
        conn.close()
        wait_for(lambda: f"['{paused.endpoint}'] left the in-sync set" in "\n".join(primary.log), 5,
                 what="the paused replica to leave the set")


def test_a_send_waiting_for_a_lagging_members_removal_is_answered_within_the_replication_timeout(etcd, tmp_path: Path):
    """etcd paused and a replica of the set paused: the send waits replica_max_lag_ms for the replica,
    then for its removal — which etcd does not answer — no longer than the send's own time
    (replication_timeout_s, 2 s by default): a retriable refusal, not a reply seconds late."""
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        paused = next(m for m in members if m is not primary)
        conn = Conn(primary.endpoint)
        conn.send_ok(message(TOPIC, "warm"))
        assert paused.proc is not None and etcd.proc is not None
        try:
            paused.proc.send_signal(signal.SIGSTOP)
            etcd.proc.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            reply = _reply(conn, message(TOPIC, "needs the removal"))
            took = time.monotonic() - t0
        finally:
            etcd.proc.send_signal(signal.SIGCONT)
            conn.close()
        assert reply in (pb.HA_NOT_AVAILABLE, pb.SLAVE_PERSISTENCE_TIMEOUT), reply
        assert took < 2.0 + 0.5, f"answered {took:.2f} s after it was sent"


def test_a_replica_behind_the_elected_member_catches_up_from_its_footprints_without_a_re_seed(etcd, tmp_path: Path):
    """The elected member applied, as a replica, batches the other replica lacks: it kept their
    footprints (OpLog.follow), so it catches that replica up in one batch — a re-seed (a full copy and a
    restart) would leave sync sends unanswered meanwhile (the slow failover rounds of issue 30)."""
    with running_group(etcd.url, tmp_path) as members:
        primary, lagging, in_sync, acked = lagging_behind(members, TOPIC, QUEUES)
        conn = Conn(primary.endpoint)
        try:  # one batch each, which the elected member applies as a replica
            acked |= {conn.send_ok(message(TOPIC, f"one of many {i}"))[0].message_id for i in range(10)}
        finally:
            conn.close()
        primary.kill()
        assert serving_primary([in_sync], LEASE_S * 5) is in_sync
        assert lagging.proc is not None
        lagging.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: f"{lagging.endpoint} joined the in-sync set" in "\n".join(in_sync.log), 30,
                 what="the lagging replica to join the new primary's in-sync set")
        assert not any("re-seed" in line for line in lagging.log), "\n".join(lagging.log)
        in_sync.kill()  # the one left is elected: it holds every acknowledged message
        assert serving_primary([lagging], LEASE_S * 5) is lagging
        assert acked <= held_ids(lagging.endpoint, TOPIC, QUEUES)
