"""Checks of undecided transactions, seen on the wire: the broker pushes
`recover_orphaned_transaction_command` down a producer's Telemetry stream, at the time the
message asks for (`orphaned_transaction_recovery_duration`), and the producer's EndTransaction
(source SERVER_CHECK) settles it."""

from __future__ import annotations

import time

from mqwire import META, message
from telemetry_stream import TelemetryStream, producer_settings

from rockmq.plumbing.channels import client_metadata
from rockmq.protocol import pb, rpc


def _half(topic: str, body: str, recover_after_ms: int) -> pb.Message:
    msg = message(topic, body)
    msg.system_properties.message_type = pb.TRANSACTION
    msg.system_properties.orphaned_transaction_recovery_duration.FromMilliseconds(recover_after_ms)
    return msg


def test_undecided_transaction_is_checked_with_a_producer_and_committed(conn, unique):
    topic, group = unique("txn-check"), unique("txn-check-g")
    conn.create_topic(topic, queues=1)
    stream = TelemetryStream(conn.mq, client_metadata(unique("txn-producer")), producer_settings(topic))
    try:
        msg = _half(topic, "pay order 7", recover_after_ms=300)
        sent = time.monotonic()
        [entry] = conn.send_ok(msg)
        check = stream.next_check(within=5)
        assert check is not None, "no transaction check arrived on the producer's Telemetry stream"
        assert time.monotonic() - sent >= 0.25, "checked before the message's recovery duration"
        recover = check.recover_orphaned_transaction_command
        assert recover.transaction_id == entry.transaction_id
        assert recover.message.body == b"pay order 7" and recover.message.topic.name == topic
        assert recover.message.system_properties.message_id == msg.system_properties.message_id

        code, early = conn.receive(group, topic, poll_s=0)
        assert code == pb.MESSAGE_NOT_FOUND and not early, "a half message was visible before its commit"
        reply = conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name=topic), message_id=recover.message.system_properties.message_id,
            transaction_id=recover.transaction_id, resolution=pb.COMMIT, source=pb.SOURCE_SERVER_CHECK),
            metadata=META, timeout=10)
        assert reply.status.code == pb.OK, reply
        [got] = conn.receive_n(group, topic, 1, within=5)
        assert got.body == b"pay order 7"
    finally:
        stream.close()


def test_check_goes_only_to_producers_of_the_topic(conn, unique):
    topic, other = unique("txn-mine"), unique("txn-other")
    conn.create_topic(topic, queues=1)
    bystander = TelemetryStream(conn.mq, client_metadata(unique("txn-bystander")), producer_settings(other))
    owner = TelemetryStream(conn.mq, client_metadata(unique("txn-owner")), producer_settings(topic))
    try:
        conn.send_ok(_half(topic, "x", recover_after_ms=200))
        assert owner.next_check(within=5) is not None
        assert bystander.next_check(within=0.5) is None, "a producer of another topic was asked"
    finally:
        owner.close()
        bystander.close()
