"""A receive frames the run of new messages nothing filters in one compiled call (records.frame_run)
and hands the rest to the loop that frames one message at a time: past `max_bytes` those are Deferred,
framed as their turn comes. Whichever way a message went out, it is the same bytes, and every
handle names its own delivery of the one checkpoint."""

from __future__ import annotations

from mqwire import message

from rockmq.broker.pop.service import FRAME, Deferred
from rockmq.protocol import pb, rpc

LONG_MS = 30_000


def test_a_receive_past_max_bytes_defers_the_rest_and_every_handle_acks(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(*(message(topic, f"m{i:02}" * 100) for i in range(10)))

    async def receive() -> list[bytes | Deferred]:
        b = harness.services
        return await b.pop.receive_deferring(b.ctx.group_for(group), b.ctx.meta.topic(topic), pb.FilterExpression(
            type=pb.TAG, expression="*"), 10, LONG_MS, 0, max_bytes=1000)

    got = harness.run(receive())
    kinds = [isinstance(m, Deferred) for m in got]
    framed = kinds.index(True)  # ~500 bytes a frame: the one that reaches 1,000 is framed, those after it deferred
    assert len(got) == 10 and framed == 2 and all(kinds[framed:]), kinds
    frames = harness.call(lambda: [m if isinstance(m, bytes) else harness.services.pop.frame(
        harness.services.ctx.meta.topic(topic), m) for m in got])
    received = [rpc.ReceiveMessageResponse.FromString(f).message for f in frames]
    assert [m.body for m in received] == [f"m{i:02}".encode() * 100 for i in range(10)]
    assert [m.system_properties.queue_offset for m in received] == list(range(10))
    assert {m.system_properties.delivery_attempt for m in received} == {1}
    handles = [m.system_properties.receipt_handle for m in received]
    assert len(set(handles)) == 10 and all(f.startswith(FRAME) for f in frames)
    acked = harness.conn.ack(group, topic, *received)
    assert [pb.Code.Name(e.status.code) for e in acked.entries] == ["OK"] * 10
    assert harness.conn.describe_group(group).inflight == 0
