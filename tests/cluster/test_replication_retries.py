"""Under sync replication a retry is acknowledged only once the replica holds what it answers with:
a duplicate send, a repeated EndTransaction or publish waits for the replica as the first call did
(issue 33 §1), and the refusal comes before the official clients' 3 s request timeout."""

from __future__ import annotations

import time

import pytest
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT, Conn, message
from waiting import wait_for

from rockmq.protocol import pb, rpc

OFFICIAL_CLIENT_TIMEOUT_S = 3.0


@pytest.fixture
def pair(tmp_path):
    """A sync primary (default replication timeout) and its replica, followed once."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "sync", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    conn = Conn(primary.endpoint)
    conn.create_topic("t", queues=1)
    wait_for(lambda: conn.send(message("t", "probe")).status.code == pb.OK, 15, what="the replica to follow")
    yield primary, replica, conn
    conn.close()
    replica.kill()
    primary.kill()


def _timed_send(conn: Conn, msg: pb.Message) -> tuple[int, float]:
    started = time.monotonic()
    code = conn.send(msg).status.code
    return code, time.monotonic() - started


def test_a_retried_send_is_not_acknowledged_without_the_replica(pair):
    primary, replica, conn = pair
    replica.kill()
    msg = message("t", "retried")
    code, took = _timed_send(conn, msg)
    assert code == pb.SLAVE_PERSISTENCE_TIMEOUT
    assert took < OFFICIAL_CLIENT_TIMEOUT_S, f"answered after {took:.1f} s: the official clients gave up before"
    code, _ = _timed_send(conn, msg)  # the client's retry, same message id: stored, but not on any replica
    assert code == pb.SLAVE_PERSISTENCE_TIMEOUT

    replica.start()
    wait_for(lambda: conn.send(msg).status.code == pb.OK, 15, what="the retry to be acknowledged with the replica back")
    replica.kill()
    out = Conn(replica.start().endpoint)
    try:
        assert "retried" in {m.body.decode() for m in out.pull_all("t", 0)}
    finally:
        out.close()


def test_a_repeated_end_transaction_waits_for_the_replica(pair):
    primary, replica, conn = pair
    half = message("t", "half")
    half.system_properties.message_type = pb.TRANSACTION
    txn, = conn.send_ok(half)
    replica.kill()

    def end() -> int:
        return conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name="t"), message_id=txn.message_id, transaction_id=txn.transaction_id,
            resolution=pb.COMMIT), metadata=META, timeout=RPC_TIMEOUT).status.code

    assert end() == pb.SLAVE_PERSISTENCE_TIMEOUT
    assert end() == pb.SLAVE_PERSISTENCE_TIMEOUT, "the repeated end was answered OK with no replica holding it"
    replica.start()
    wait_for(lambda: end() == pb.OK, 15, what="the repeated end to be acknowledged with the replica back")
