"""A client retrying a send (same message id) gets the first send's answer back, whatever the
message type: same offset, same transaction id, same recall handle — and one stored copy."""

from __future__ import annotations

import time

from mqwire import message

from rockmq.protocol import pb, rpc


def test_retried_transactional_send_keeps_its_transaction_id(conn, unique):
    topic = unique("retry-txn")
    msg = message(topic, b"half")
    msg.system_properties.message_type = pb.TRANSACTION
    first = conn.send_ok(msg)[0]
    again = conn.send_ok(msg)[0]
    assert first.transaction_id and again.transaction_id == first.transaction_id
    reply = conn.mq.EndTransaction(rpc.EndTransactionRequest(
        topic=pb.Resource(name=topic), message_id=msg.system_properties.message_id,
        transaction_id=again.transaction_id, resolution=pb.COMMIT, source=pb.SOURCE_CLIENT), timeout=10)
    assert reply.status.code == pb.OK, reply
    got = conn.receive_n(unique("retry-txn-g"), topic, 2, within=2)
    assert [m.body for m in got] == [b"half"]


def test_retried_delayed_send_keeps_its_recall_handle(conn, unique):
    topic = unique("retry-delay")
    msg = message(topic, b"later")
    msg.system_properties.message_type = pb.DELAY
    msg.system_properties.delivery_timestamp.FromMilliseconds(int(time.time() * 1000) + 60_000)
    first = conn.send_ok(msg)[0]
    again = conn.send_ok(msg)[0]
    assert first.recall_handle and again.recall_handle == first.recall_handle
    reply = conn.mq.RecallMessage(rpc.RecallMessageRequest(topic=pb.Resource(name=topic),
                                                           recall_handle=again.recall_handle), timeout=10)
    assert reply.status.code == pb.OK and reply.message_id == msg.system_properties.message_id


def test_end_transaction_must_name_its_own_message(conn, unique):
    topic = unique("txn-mismatch")
    msg = message(topic, b"half")
    msg.system_properties.message_type = pb.TRANSACTION
    txn = conn.send_ok(msg)[0].transaction_id

    def end(topic_name: str, message_id: str) -> int:
        return conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name=topic_name), message_id=message_id, transaction_id=txn,
            resolution=pb.ROLLBACK, source=pb.SOURCE_CLIENT), timeout=10).status.code

    assert end(topic, "not-its-id") == pb.INVALID_TRANSACTION_ID
    assert end(unique("other-topic"), msg.system_properties.message_id) == pb.INVALID_TRANSACTION_ID
    assert end(topic, msg.system_properties.message_id) == pb.OK
    assert end(topic, msg.system_properties.message_id) == pb.OK  # a repeat of the same resolution
    assert conn.receive_n(unique("txn-mismatch-g"), topic, 1, within=1) == []  # rolled back
