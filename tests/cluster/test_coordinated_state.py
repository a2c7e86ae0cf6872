"""What a coordinated group's new primary inherits (issue 30 §4; real etcd, real broker processes):
the replication stream carries every piece of broker state a client holds a handle to, so after
kill -9 of the primary the elected member honours them all — a POP receipt handle (ack works, the
message stays invisible until then), a recall handle, a transaction waiting for its end, a timer
(the delayed message is delivered when due) and a de-dup entry (the same message id sent again
is answered with its first receipt, nothing stored twice)."""

from __future__ import annotations

import time
from pathlib import Path

from coordinated_group import in_sync_joined, running_group, serving_primary
from mqwire import META, RPC_TIMEOUT, Conn, held_ids, message
from waiting import wait_for

from rockmq.protocol import pb, rpc

TOPIC, GROUP = "inherit", "inherit-g"
DUE_S = 8.0  # the delayed message falls due after the failover


def test_the_new_primary_honours_every_handle_the_old_one_gave(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        old = serving_primary(members)
        old.cli("topic", "create", TOPIC, "--queues", "1", check=True)
        in_sync_joined(old)
        conn = Conn(old.endpoint)
        try:
            given = _handles(conn)
        finally:
            conn.close()
        old.kill()
        new = serving_primary([m for m in members if m is not old])
        conn = Conn(new.endpoint)
        try:
            wait_for(lambda: conn.send(message(TOPIC, "probe")).status.code == pb.OK, 15, what="the new primary's writes")
            _check(conn, given, held_ids(new.endpoint, TOPIC, 1))
        finally:
            conn.close()


def _handles(conn: Conn) -> dict[str, object]:
    """On the primary: a received message (not acked), a dedup'ed send, a timer with its recall handle
    and one due soon, a transaction's half message -> what the test checks on the next primary."""
    plain = conn.send_ok(message(TOPIC, "received"))[0]
    received = conn.receive_n(GROUP, TOPIC, 1, invisible_ms=60_000)
    assert [m.system_properties.message_id for m in received] == [plain.message_id]
    once = message(TOPIC, "once")
    first = conn.send_ok(once)[0]
    recalled, due = _delayed(600), _delayed(DUE_S)
    half = message(TOPIC, "half")
    half.system_properties.message_type = pb.TRANSACTION
    timer, soon, txn = conn.send_ok(recalled, due, half)
    return {"receipt": received[0].system_properties.receipt_handle, "received": plain.message_id,
            "once": once, "first": first, "timer": timer, "soon": soon.message_id, "txn": txn,
            "due_at": time.monotonic() + DUE_S}


def _delayed(after_s: float) -> pb.Message:
    m = message(TOPIC, f"due in {after_s} s")
    m.system_properties.message_type = pb.DELAY
    m.system_properties.delivery_timestamp.FromMilliseconds(int((time.time() + after_s) * 1000))
    return m


def _check(conn: Conn, given: dict, held: set[str]) -> None:
    again = conn.send_ok(given["once"])[0]  # the same message id: de-duplicated, first receipt
    assert (again.offset, again.message_id) == (given["first"].offset, given["first"].message_id)
    assert conn.ack(GROUP, TOPIC, given["receipt"]).status.code == pb.OK, "the receipt handle is unknown"
    recall = conn.mq.RecallMessage(rpc.RecallMessageRequest(topic=pb.Resource(name=TOPIC),
                                                            recall_handle=given["timer"].recall_handle),
                                   metadata=META, timeout=RPC_TIMEOUT)
    assert recall.status.code == pb.OK, recall.status
    end = conn.mq.EndTransaction(rpc.EndTransactionRequest(
        topic=pb.Resource(name=TOPIC), message_id=given["txn"].message_id,
        transaction_id=given["txn"].transaction_id, resolution=pb.COMMIT), metadata=META, timeout=RPC_TIMEOUT)
    assert end.status.code == pb.OK, end.status
    expected = {given["once"].system_properties.message_id, given["txn"].message_id, given["soon"]}
    got: list[str] = []
    deadline = max(given["due_at"], time.monotonic()) + 10
    while not expected <= set(got) and time.monotonic() < deadline:
        got += [m.system_properties.message_id for m in conn.receive(GROUP, TOPIC, invisible_ms=60_000, poll_s=1.0)[1]]
    assert expected <= set(got), f"not delivered: {expected - set(got)}"
    assert given["received"] not in got, "a message received before the failover (and acked) came again"
    assert given["timer"].message_id not in got, "the recalled message was delivered"
    assert given["received"] in held and len(got) == len(set(got))
