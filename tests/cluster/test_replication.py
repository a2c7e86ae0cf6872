"""Replicas: a replica follows its primary batch by batch, serves reads only, keeps every send a
sync primary acknowledged when the primary is killed, and becomes a primary when promoted."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT, Conn, held_ids, message
from sending import send_batches
from waiting import wait_for

from rockmq.protocol import pb, rpc


@pytest.fixture
def pair(tmp_path):
    """A primary with sync replication and its replica."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    yield primary, replica
    replica.kill()
    primary.kill()


def test_replica_follows_and_serves_reads_only(pair):
    primary, replica = pair
    conn = Conn(primary.endpoint)
    try:
        conn.create_topic("r", queues=2)
        sent = {e.message_id for e in conn.send_ok(*(message("r", f"m{i}") for i in range(40)))}
    finally:
        conn.close()

    def caught_up() -> bool:
        try:
            return held_ids(replica.endpoint, "r", 2) == sent
        except (grpc.RpcError, AssertionError):
            return False

    wait_for(caught_up, 15, what="the replica to catch up")
    rconn = Conn(replica.endpoint)
    try:
        with pytest.raises(grpc.RpcError) as e:
            rconn.send(message("r", "no"))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "replica of" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:  # a streaming call too
            rconn.receive_frames("g", "r")
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "replica of" in e.value.details()
    finally:
        rconn.close()


def test_every_acknowledged_send_survives_on_the_replica_and_promotion(pair):
    primary, replica = pair
    conn = Conn(primary.endpoint)
    conn.create_topic("sync", queues=4)
    acked: list[str] = []
    stop = threading.Event()
    threads = send_batches(primary.endpoint, "sync", acked, stop)
    wait_for(lambda: len(acked) >= 400, 15, what="400 sends acknowledged")  # then kill it mid-stream
    primary.kill()
    stop.set()
    for t in threads:
        t.join(20)
    conn.close()
    held = held_ids(replica.endpoint, "sync", 4)
    lost = set(acked) - held
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged messages are not on the replica"

    out = replica.cli("broker", "promote")
    assert out.returncode == 0 and "promoted" in out.stdout, out.stdout + out.stderr

    def accepts_sends() -> bool:
        c = Conn(replica.endpoint)
        try:
            return c.send(message("sync", "after promotion")).status.code == pb.OK
        except grpc.RpcError:
            return False
        finally:
            c.close()

    wait_for(accepts_sends, 15, what="the promoted replica to accept sends")
    c = Conn(replica.endpoint)
    try:
        got = c.receive_n("after-g", "sync", 10, within=10)
        assert len(got) == 10, "the promoted replica does not serve POP consumption"
    finally:
        c.close()
    again = replica.cli("broker", "promote")
    assert again.returncode == 1 and "not a replica" in again.stderr


def test_sync_primary_without_replica_refuses_to_acknowledge(tmp_path):
    primary = BrokerProcess(tmp_path / "alone", "--replication", "sync",
                            env={"ROCKMQ_REPLICATION_TIMEOUT_S": "0.5"}).start()
    conn = Conn(primary.endpoint)
    try:
        conn.create_topic("lonely", queues=1)
        started = time.monotonic()
        reply = conn.send(message("lonely", "x"))
        assert reply.status.code == pb.SLAVE_PERSISTENCE_TIMEOUT, reply
        assert "no replica confirmed" in reply.status.message
        assert time.monotonic() - started < 5
    finally:
        conn.close()
        primary.kill()


def test_a_replica_creates_nothing_of_its_own(pair):
    primary, replica = pair
    rconn, pconn = Conn(replica.endpoint), Conn(primary.endpoint)
    try:
        reply = rconn.query_route("later")  # auto-creation would give the replica a topic id of its own
        assert reply.status.code == pb.TOPIC_NOT_FOUND, reply.status
        pconn.create_topic("later", queues=1)
        sent = {e.message_id for e in pconn.send_ok(message("later", "x"), message("later", "y"))}

        def caught_up() -> bool:
            try:
                return {m.system_properties.message_id for m in rconn.pull_all("later", 0)} == sent
            except (grpc.RpcError, AssertionError):
                return False

        wait_for(caught_up, 15, what="the replica to receive the topic created after its route query")
    finally:
        rconn.close()
        pconn.close()


def test_recall_and_end_transaction_wait_for_the_replica_as_sends_do(tmp_path):
    """One commit step (broker/commit.py): under sync replication a recall and an EndTransaction
    are answered only once a replica applied them, like the sends that made them."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1",
                            env={"ROCKMQ_REPLICATION_TIMEOUT_S": "1"}).start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    conn = Conn(primary.endpoint)
    try:
        conn.create_topic("held", queues=1)
        half = message("held", "half")
        half.system_properties.message_type = pb.TRANSACTION
        delayed = message("held", "later")
        delayed.system_properties.delivery_timestamp.FromMilliseconds(int(time.time() * 1000) + 600_000)
        delayed.system_properties.message_type = pb.DELAY
        wait_for(lambda: conn.send(message("held", "probe")).status.code == pb.OK, 15, what="the replica to follow")
        txn, timer = conn.send_ok(half, delayed)
        replica.kill()
        end = conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name="held"), message_id=txn.message_id, transaction_id=txn.transaction_id,
            resolution=pb.COMMIT), metadata=META, timeout=RPC_TIMEOUT)
        assert end.status.code == pb.SLAVE_PERSISTENCE_TIMEOUT, end.status
        recall = conn.mq.RecallMessage(rpc.RecallMessageRequest(topic=pb.Resource(name="held"),
                                                                recall_handle=timer.recall_handle),
                                       metadata=META, timeout=RPC_TIMEOUT)
        assert recall.status.code == pb.SLAVE_PERSISTENCE_TIMEOUT, recall.status
    finally:
        conn.close()
        replica.kill()
        primary.kill()
