"""Restarts of a replicated primary (issue 33 §2, §3): a primary killed under load and restarted in
place is followed again from where its replica stopped (the batches it kept in memory are gone: the
footprints kept in its store bring the replica up to date); a primary a replica followed restarts
read-only until someone confirms it is still the primary, and stays so when nobody can."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import Conn, held_ids, message
from sending import send_batches
from waiting import wait_for

from rockmq.protocol import pb

CONFIRMED = "confirmed this broker is still the primary"


def _send_code(endpoint: str, topic: str, body: str = "x") -> int:
    conn = Conn(endpoint)
    try:
        return conn.send(message(topic, body)).status.code
    except grpc.RpcError:
        return -1
    finally:
        conn.close()


def test_a_primary_killed_under_load_and_restarted_is_followed_again(tmp_path):
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    try:
        Conn(primary.endpoint).create_topic("load", queues=4)
        acked: list[str] = []
        stop = threading.Event()
        threads = send_batches(primary.endpoint, "load", acked, stop, threads=3)
        wait_for(lambda: len(acked) >= 400, 20, what="400 sends acknowledged")
        primary.kill()
        stop.set()
        for t in threads:
            t.join(20)
        primary.start()  # in place: same directory, same port
        started = time.monotonic()
        wait_for(lambda: _send_code(primary.endpoint, "load") == pb.OK, 20,
                 what="sync sends to succeed again after the restart")
        print(f"{len(acked)} acknowledged before the kill; sync sends succeed {time.monotonic() - started:.2f} s "
              f"after the restart")
        assert not [line for line in replica.log if "too far behind" in line], "\n".join(replica.log)
        assert any(CONFIRMED in line for line in primary.log), "\n".join(primary.log)
        wait_for(lambda: held_ids(replica.endpoint, "load", 4) == held_ids(primary.endpoint, "load", 4), 20,
                 what="the replica to hold everything the primary holds")
        lost = set(acked) - held_ids(replica.endpoint, "load", 4)
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages are not on the replica"
    finally:
        replica.kill()
        primary.kill()


@pytest.fixture
def promoted_away(tmp_path):
    """An async primary whose replica followed it, then was promoted while the primary was down; the
    promoted replica is down too."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    Conn(primary.endpoint).create_topic("t", queues=1)
    wait_for(lambda: held_ids(replica.endpoint, "t", 1) if _send_code(primary.endpoint, "t") == pb.OK else False, 15,
             what="the replica to follow")
    primary.kill()
    assert replica.cli("broker", "promote").returncode == 0
    wait_for(lambda: _send_code(replica.endpoint, "t") == pb.OK, 15, what="the promoted replica to take sends")
    replica.kill()
    yield primary, replica
    primary.kill()
    replica.kill()


def test_a_restarted_old_primary_stays_read_only_with_no_one_to_ask(promoted_away):
    primary, replica = promoted_away
    primary.start()
    assert _send_code(primary.endpoint, "t") == pb.HA_NOT_AVAILABLE
    said = [line for line in primary.log if "serves reads only until its replica confirms" in line]
    assert len(said) == 1, "\n".join(primary.log)
    assert len(held_ids(primary.endpoint, "t", 1)) >= 1, "reads are served meanwhile"
    until = time.monotonic() + 3  # a registration interval and more: nobody confirms it
    while time.monotonic() < until:
        assert _send_code(primary.endpoint, "t") == pb.HA_NOT_AVAILABLE
        time.sleep(0.2)

    replica.start()  # the promoted replica tells it of its epoch: fenced for good
    wait_for(lambda: any("refuses writes from now on" in line for line in primary.log), 15,
             what="the old primary to hear of the promotion")
    assert _send_code(primary.endpoint, "t") == pb.HA_NOT_AVAILABLE


def test_force_primary_takes_writes_at_once_and_says_what_it_risks(promoted_away):
    primary, _ = promoted_away
    primary.extra_args.append("--force-primary")
    primary.start()
    assert _send_code(primary.endpoint, "t") == pb.OK
    assert any("--force-primary: taking writes without confirming" in line for line in primary.log)


def test_a_name_server_confirms_a_restarted_primary_before_it_is_ready(tmp_path):
    namesrv = NameServerProcess().start()
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1",
                            "--namesrv", namesrv.endpoint).start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", "b1", "--broker-name", "b1",
                            "--namesrv", namesrv.endpoint).start()
    try:
        Conn(primary.endpoint).create_topic("t", queues=1)
        wait_for(lambda: held_ids(replica.endpoint, "t", 1) if _send_code(primary.endpoint, "t") == pb.OK else False, 15,
                 what="the replica to follow")
        replica.kill()
        primary.kill()
        primary.start()
        assert _send_code(primary.endpoint, "t") == pb.OK, "\n".join(primary.log)
        assert any(f"name server {namesrv.endpoint} {CONFIRMED}" in line for line in primary.log)
    finally:
        replica.kill()
        primary.kill()
        namesrv.kill()


def _send_each(endpoint: str, topic: str, prefix: str, n: int) -> set[str]:
    """`n` sends of one message each (a batch each on the primary); -> their ids."""
    conn = Conn(endpoint)
    try:
        return {conn.send_ok(message(topic, f"{prefix}{i}"))[0].message_id for i in range(n)}
    finally:
        conn.close()


@pytest.mark.parametrize("ring", ["", "2048"], ids=["truncated", "re-seeded"])
def test_a_former_primary_following_its_successor_takes_its_history_not_its_own(tmp_path, ring: str):
    """An old primary wrote batches its replica never got; the replica was promoted and wrote its
    own under the same numbers. Restarted as a replica of its successor, the old primary's numbers
    name other batches there: it truncates its tail (broker/cluster/truncation.py, no full copy) —
    or, its ring so small that the keys its tail touched are no longer all known, it re-seeds — and
    ends holding exactly the new primary's messages."""
    env = {"ROCKMQ_REPLICATION_RING_BYTES": ring} if ring else None
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1", env=env).start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1",
                            "--replication", "async").start()  # promoted, it keeps batches for replicas
    try:
        Conn(primary.endpoint).create_topic("t", queues=1)
        shared = _send_each(primary.endpoint, "t", "shared", 5)
        wait_for(lambda: shared <= held_ids(replica.endpoint, "t", 1), 15, what="the replica to follow")
        replica.kill()
        _send_each(primary.endpoint, "t", "only-old", 10)  # never replicated
        primary.kill()
        replica.start()
        assert replica.cli("broker", "promote").returncode == 0
        wait_for(lambda: _send_code(replica.endpoint, "t") == pb.OK, 15, what="the promoted replica to take sends")
        newer = _send_each(replica.endpoint, "t", "new", 30)
        expected = held_ids(replica.endpoint, "t", 1)
        assert shared | newer <= expected

        primary.extra_args[primary.extra_args.index("async") - 1:] = ["--replica-of", replica.endpoint,
                                                                       "--broker-name", "b1"]
        primary.start()
        wait_for(lambda: held_ids(primary.endpoint, "t", 1) == expected, 30,
                 what="the former primary to hold the new primary's history")
        truncated = any("truncated this member's unacknowledged tail" in line and "dropped 10 messages" in line
                        for line in primary.log)
        assert truncated == (not ring), "\n".join(primary.log)
        assert any("re-seeding from" in line for line in primary.log) == bool(ring)
        assert any("are not all known here" in line for line in primary.log) == bool(ring)
    finally:
        replica.kill()
        primary.kill()
