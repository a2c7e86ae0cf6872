"""kill -9 the broker in the middle of heavy sending: no acknowledged message may be lost.

Under the default `sync` flush policy a send is acknowledged only after its WAL record is
fsync'ed, so every message whose SendMessage reply said OK must be readable after a restart, at
the offset the reply named, and each queue's offsets must stay dense (0, 1, 2, ... no gaps).
"""

from __future__ import annotations

import asyncio
import random
import socket
import time

import grpc
from mqwire import message

from rockmq.plumbing.channels import client_metadata
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

META = client_metadata("chaos-kill9@" + socket.gethostname())
TOPIC = "chaos-kill9"
QUEUES = 4
SENDERS = 24
SEND_FOR_S = 3.0


class Tally:
    def __init__(self) -> None:
        self.acked: dict[str, int] = {}  # message id -> offset in the OK reply
        self.attempted: set[str] = set()
        self.refused: list[str] = []  # non-OK entry statuses (should not happen)
        self.rpc_errors_before_kill = 0
        self.rpc_errors_after_kill = 0
        self.inflight = 0
        self.inflight_at_kill = 0
        self.acked_at_kill = 0
        self.killed = False


async def _storm(broker, tally: Tally) -> None:
    loop = asyncio.get_running_loop()
    channels = [grpc.aio.insecure_channel(broker.endpoint) for _ in range(4)]
    stubs = [svc.MessagingServiceStub(ch) for ch in channels]
    start = loop.time()
    stop_at = start + SEND_FOR_S
    kill_after = random.uniform(1.2, 1.8)

    async def sender(i: int) -> None:
        rng = random.Random(i)
        stub = stubs[i % len(stubs)]
        while loop.time() < stop_at:
            n = 1 if i % 3 == 0 else rng.randint(2, 16)  # a third send one at a time, the rest in batches
            msgs = [message(TOPIC, rng.randbytes(rng.randint(16, 512))) for _ in range(n)]
            tally.attempted.update(m.system_properties.message_id for m in msgs)
            tally.inflight += 1
            try:
                reply = await stub.SendMessage(rpc.SendMessageRequest(messages=msgs), metadata=META, timeout=3)
            except grpc.aio.AioRpcError:
                if tally.killed:
                    tally.rpc_errors_after_kill += 1
                    await asyncio.sleep(0.05)
                else:
                    tally.rpc_errors_before_kill += 1
                continue
            finally:
                tally.inflight -= 1
            for m, e in zip(msgs, reply.entries):
                if e.status.code == pb.OK:
                    assert e.message_id == m.system_properties.message_id
                    tally.acked[e.message_id] = e.offset
                else:
                    tally.refused.append(f"{pb.Code.Name(e.status.code)}: {e.status.message}")

    async def killer() -> None:
        await asyncio.sleep(kill_after)
        tally.inflight_at_kill, tally.acked_at_kill = tally.inflight, len(tally.acked)
        broker.kill()  # SIGKILL + wait: a few ms
        tally.killed = True

    try:
        await asyncio.gather(killer(), *[sender(i) for i in range(SENDERS)])
    finally:
        for ch in channels:
            await ch.close()


def _pull_queue(stub, queue_id: int) -> list[pb.Message]:
    mq = pb.MessageQueue(topic=pb.Resource(name=TOPIC), id=queue_id)
    end = stub.QueryOffset(rpc.QueryOffsetRequest(message_queue=mq, query_offset_policy=pb.END), metadata=META, timeout=10)
    assert end.status.code == pb.OK, end
    out: list[pb.Message] = []
    offset = 0
    while offset < end.offset:
        req = rpc.PullMessageRequest(group=pb.Resource(name="chaos-reader"), message_queue=mq, offset=offset,
                                     batch_size=1024)
        frames = list(stub.PullMessage(req, metadata=META, timeout=30))
        assert frames[0].status.code == pb.OK, (queue_id, offset, frames[0])
        msgs = [f.message for f in frames if f.WhichOneof("content") == "message"]
        nxt = frames[-1].next_offset
        assert frames[-1].WhichOneof("content") == "next_offset" and nxt == offset + len(msgs), (offset, nxt, len(msgs))
        out.extend(msgs)
        offset = nxt
    return out


def test_kill9_loses_no_acknowledged_send(fresh_broker):
    broker = fresh_broker
    with grpc.insecure_channel(broker.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC, queue_count=QUEUES), timeout=10)

    tally = Tally()
    t0 = time.monotonic()
    asyncio.run(asyncio.wait_for(_storm(broker, tally), timeout=SEND_FOR_S + 10))
    storm_s = time.monotonic() - t0
    summary = (f"acked {len(tally.acked)} of {len(tally.attempted)} sent in {storm_s:.1f} s; "
               f"{tally.acked_at_kill} acked and {tally.inflight_at_kill} requests in flight at the kill; "
               f"rpc errors before/after kill {tally.rpc_errors_before_kill}/{tally.rpc_errors_after_kill}")
    print(summary)
    assert not tally.refused, f"the broker refused sends: {tally.refused[:5]}"
    assert tally.rpc_errors_before_kill == 0, summary
    assert tally.acked_at_kill >= 100, "too few sends before the kill to mean anything: " + summary
    assert tally.inflight_at_kill > 0 and tally.rpc_errors_after_kill > 0, "the kill did not hit mid-stream: " + summary

    broker.start()
    with grpc.insecure_channel(broker.endpoint) as ch:
        stub = svc.MessagingServiceStub(ch)
        stored: dict[str, tuple[int, int]] = {}
        ends: dict[int, int] = {}
        for q in range(QUEUES):
            msgs = _pull_queue(stub, q)
            offsets = [m.system_properties.queue_offset for m in msgs]
            assert offsets == list(range(len(msgs))), f"queue {q}: offsets not dense from 0"
            ends[q] = len(msgs)
            for m in msgs:
                mid = m.system_properties.message_id
                assert mid not in stored, f"message {mid} stored twice"
                assert m.system_properties.queue_id == q
                stored[mid] = (q, m.system_properties.queue_offset)

        lost = [mid for mid in tally.acked if mid not in stored]
        assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {lost[:5]}; {summary}"
        moved = [(mid, off, stored[mid]) for mid, off in tally.acked.items() if stored[mid][1] != off]
        assert not moved, f"acknowledged messages stored at another offset than replied: {moved[:5]}"
        phantoms = set(stored) - tally.attempted
        assert not phantoms, f"stored messages nobody sent: {list(phantoms)[:5]}"

        # The restarted broker continues each queue densely, and still knows the acked ids.
        new = [message(TOPIC, b"after-restart") for _ in range(QUEUES)]
        reply = stub.SendMessage(rpc.SendMessageRequest(messages=new), metadata=META, timeout=10)
        assert reply.status.code == pb.OK, reply
        for q in range(QUEUES):
            tail = [m.system_properties.queue_offset for m in _pull_queue(stub, q)[ends[q]:]]
            assert tail == list(range(ends[q], ends[q] + len(tail))), (q, ends[q], tail)
        assert sum(len(_pull_queue(stub, q)) for q in range(QUEUES)) == len(stored) + QUEUES

        sample = random.Random(7).sample(sorted(tally.acked), min(20, len(tally.acked)))
        retry = [message(TOPIC, b"retry") for _ in sample]
        for m, mid in zip(retry, sample):
            m.system_properties.message_id = mid
        reply = stub.SendMessage(rpc.SendMessageRequest(messages=retry), metadata=META, timeout=10)
        assert [e.status.code for e in reply.entries] == [pb.OK] * len(sample), reply.status
        assert [e.offset for e in reply.entries] == [tally.acked[mid] for mid in sample], "dedup lost by the crash"
