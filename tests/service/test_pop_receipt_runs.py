"""BatchMessaging.Ack in short: a receive's handles as their token once and entry numbers
(`receipt_runs`, what rockmq's client sends), checked and settled as the handles themselves are,
in one reply with the plain handles' results first."""

from __future__ import annotations

from mqwire import RPC_TIMEOUT, code_name, message

from rockmq.protocol import batch as batch_pb
from rockmq.protocol import pb, receipt


def _ack(harness, group: str, topic: str, handles: list[str], runs: list[tuple[str, list[int]]]) -> list[str]:
    reply = harness.conn.batch.Ack(batch_pb.AckRequest(
        group=group, topic=topic, receipt_handles=handles,
        receipt_runs=[batch_pb.ReceiptRun(token=token, entries=entries) for token, entries in runs]), timeout=RPC_TIMEOUT)
    return [code_name(e.code) for e in reply.entries]


def test_runs_ack_as_the_handles_do(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(*(message(topic, f"m{i}") for i in range(4)))
    reply = harness.conn.batch.Receive(batch_pb.ReceiveRequest(group=group, topic=topic, batch_size=4,
                                                               invisible_duration_ms=30_000), timeout=RPC_TIMEOUT)
    handles = [pb.Message.FromString(m).system_properties.receipt_handle for m in reply.messages]
    [(token, entries)] = receipt.runs(handles)
    assert entries == [0, 1, 2, 3]
    other = receipt.runs([receipt.handle(token[:-1] + ("A" if token[-1] != "A" else "B"), 0)])  # its signature broken
    assert _ack(harness, group, topic, [handles[3]], [(token, [0, 2]), other[0], (token, [9])]) == [
        "OK", "OK", "OK", "INVALID_RECEIPT_HANDLE", "INVALID_RECEIPT_HANDLE"]  # forged token; no entry 9
    assert harness.conn.describe_group(group).inflight == 1
    assert _ack(harness, group, topic, [], [(token, [2, 1, 1])]) == ["INVALID_RECEIPT_HANDLE", "OK", "INVALID_RECEIPT_HANDLE"]
    assert harness.conn.describe_group(group).inflight == 0
    other_group = harness.conn.create_group(unique("other")).name
    assert _ack(harness, other_group, topic, [], [(token, [3])]) == ["INVALID_RECEIPT_HANDLE"]  # another group's


def test_an_ack_naming_more_than_max_ack_entries_is_refused_whole(harness, unique):
    """A run's entry is a byte on the wire: uncapped, one request named millions, each a step and a
    reply entry of the broker's (a reply past the gRPC limit, the ack lost). Refused as a whole,
    nothing acknowledged; as many as the cap are answered one by one. AckMessage is capped alike."""
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(message(topic, "m"))
    reply = harness.conn.batch.Receive(batch_pb.ReceiveRequest(group=group, topic=topic, batch_size=1,
                                                               invisible_duration_ms=30_000), timeout=RPC_TIMEOUT)
    [handle] = [pb.Message.FromString(m).system_properties.receipt_handle for m in reply.messages]
    [(token, entries)] = receipt.runs([handle])
    over = [(token, entries * (receipt.MAX_ACK_ENTRIES - 1)), (token, entries)]
    request = batch_pb.AckRequest(group=group, topic=topic, receipt_handles=[handle],
                                  receipt_runs=[batch_pb.ReceiptRun(token=t, entries=e) for t, e in over])
    refused = harness.conn.batch.Ack(request, timeout=RPC_TIMEOUT)
    assert (code_name(refused.status.code), len(refused.entries)) == ("BAD_REQUEST", 0), refused.status
    assert str(receipt.MAX_ACK_ENTRIES) in refused.status.message
    v2 = harness.conn.ack(group, topic, *[handle] * (receipt.MAX_ACK_ENTRIES + 1))
    assert (code_name(v2.status.code), len(v2.entries)) == ("BAD_REQUEST", 0), v2.status
    assert harness.conn.describe_group(group).inflight == 1
    assert _ack(harness, group, topic, [handle], over[:1]) == (  # the cap itself: one OK, the rest named twice
        ["OK"] + ["INVALID_RECEIPT_HANDLE"] * (receipt.MAX_ACK_ENTRIES - 1))
    assert harness.conn.describe_group(group).inflight == 0
