"""Clients that open server streams and never read them cannot pin the broker's memory (issue 20 §2.1).

Each stalled client is a raw HTTP/2 connection (tests/stalled_h2.py) that asks ReceiveMessage for
32 messages of 32 KiB and reads nothing more. Past `stream_buffer_total_bytes` for all of them, the
broker holds at most `stream_buffer_bytes` of a stalled receive (its RSS grows by a bounded amount per
stream; before, by 1 MiB a stream: 1.2 GB for 1,000), cancels each stream after
`stream_send_timeout_s`, and every message comes back to a consumer that does read (FIFO groups too,
in order). Telemetry and replication Follow streams that stop reading are cancelled the same way.
Full variant (`scripts/chaos`): 1,000 streams, RSS <= 500 MB.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from broker_process import BrokerProcess
from chaos_scale import FULL, scaled
from mqwire import META, Conn, filter_expression, message
from stalled_h2 import StalledConnection
from telemetry_stream import TelemetryStream
from waiting import wait_for

from rockmq.bench.probe import broker_sample
from rockmq.protocol import pb, replication, rpc

STREAMS = scaled(80, 1000)
PER_STREAM = 32
BODY = 32 * 1024
TIMEOUT_S = scaled(3, 30)  # stream_send_timeout_s
INVISIBLE_MS = (TIMEOUT_S + 20) * 1000  # a released message comes back long before
PER_STREAM_BOUND = 256 * 1024  # RSS a stalled receive may cost: stream_buffer_bytes (128 KiB) framed, gRPC's frame, the call
TOTAL = scaled(4, 64) * 1024 * 1024  # stream_buffer_total_bytes: what all of them hold framed before each holds 128 KiB
SLACK = 8 * 1024 * 1024 + TOTAL
FULL_BOUND = 500 * 1024 * 1024
RECEIVE = "/apache.rocketmq.v2.MessagingService/ReceiveMessage"
TELEMETRY = "/apache.rocketmq.v2.MessagingService/Telemetry"
FOLLOW = "/rockmq.replication.v1.Replication/Follow"


def rss(broker: BrokerProcess) -> int:
    assert broker.proc is not None
    sample = broker_sample(broker.proc.pid)
    assert sample is not None, "the broker is gone"
    return sample.rss_kib * 1024


def receive_request(group: str, topic: str) -> bytes:
    req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group), filter_expression=filter_expression(),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                    batch_size=PER_STREAM)
    req.invisible_duration.FromMilliseconds(INVISIBLE_MS)
    req.long_polling_timeout.FromMilliseconds(1000)
    return req.SerializeToString()


def cancelled(broker: BrokerProcess, method: str) -> bool:
    return any(f"cancelled a {method} stream" in line for line in list(broker.log))


def send_all(conn: Conn, topic: str, count: int, group: str | None = None) -> list[bytes]:
    """`count` messages of BODY bytes, 32 per request -> their bodies in order."""
    bodies = [i.to_bytes(4, "big") + os.urandom(BODY - 4) for i in range(count)]
    for i in range(0, count, PER_STREAM):
        conn.send_ok(*(message(topic, b, group=group) for b in bodies[i:i + PER_STREAM]))
    return bodies


def test_stalled_receive_streams_are_bounded_cancelled_and_redelivered(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", env={"ROCKMQ_STREAM_SEND_TIMEOUT_S": str(TIMEOUT_S),
                                                   "ROCKMQ_STREAM_BUFFER_TOTAL_BYTES": str(TOTAL)}).start()
    conn = Conn(broker.endpoint)
    stalled: list[StalledConnection] = []
    try:
        conn.create_topic("stalled", queues=4)
        conn.create_group("readers")
        conn.create_topic("stalled-fifo", queues=1, types=("FIFO",))
        conn.create_group("fifo-readers", fifo=True)
        bodies = set(send_all(conn, "stalled", STREAMS * PER_STREAM))
        fifo_bodies = send_all(conn, "stalled-fifo", PER_STREAM, group="one-group")
        before = rss(broker)

        opened = time.monotonic()
        for group, topic in [("readers", "stalled")] * STREAMS + [("fifo-readers", "stalled-fifo")]:
            stalled.append(StalledConnection("127.0.0.1", broker.port))
            stalled[-1].call(RECEIVE, receive_request(group, topic), META)
        time.sleep(min(TIMEOUT_S / 3, 5))  # every receive popped its batch and waits on a write
        held = rss(broker) - before
        peak = rss(broker)
        print(f"\n{STREAMS} stalled ReceiveMessage streams: RSS {before >> 20} MB -> {(before + held) >> 20} MB "
              f"({held // STREAMS >> 10} KiB a stream)")
        assert held <= STREAMS * PER_STREAM_BOUND + SLACK, f"{held >> 20} MB held by {STREAMS} stalled streams"
        assert not cancelled(broker, "ReceiveMessage"), "cancelled before stream_send_timeout_s"

        wait_for(lambda: cancelled(broker, "ReceiveMessage"), timeout=TIMEOUT_S * 1.2 + 10)
        waited = time.monotonic() - opened
        assert waited >= TIMEOUT_S, f"cancelled after {waited:.1f} s"
        peak = max(peak, rss(broker))
        if FULL:
            print(f"peak RSS {peak >> 20} MB; cancelled after {waited:.1f} s")
            assert peak <= FULL_BOUND, f"RSS {peak >> 20} MB with {STREAMS} stalled streams"

        got = conn.receive_n("readers", "stalled", len(bodies), within=INVISIBLE_MS / 1000 + scaled(10, 600),
                             invisible_ms=3_600_000)  # 1 GiB at full size: none may come back twice meanwhile
        assert {m.body for m in got} == bodies  # every message, none lost, none twice
        in_order: list[bytes] = []
        while len(in_order) < len(fifo_bodies):
            code, msgs = conn.receive("fifo-readers", "stalled-fifo", poll_s=5, invisible_ms=60_000)
            assert code == pb.OK, pb.Code.Name(code)
            in_order += [m.body for m in msgs]
            conn.ack("fifo-readers", "stalled-fifo", *msgs)
        assert in_order == fifo_bodies  # the FIFO group released, in its order
    finally:
        for s in stalled:
            s.close()
        conn.close()
        broker.stop()


def test_stalled_telemetry_and_follow_streams_are_cancelled(tmp_path: Path) -> None:
    """With a zero window nothing the broker writes gets through: the first reply stalls each stream.
    A stream that waits (a long poll, an idle Telemetry stream) is not stalled: it is left alone."""
    broker = BrokerProcess(tmp_path / "data", "--replication", "async", "--stream-send-timeout", "1").start()
    conn = Conn(broker.endpoint)
    stalled = [StalledConnection("127.0.0.1", broker.port, window=0) for _ in range(2)]
    settings = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="t")]))
    idle = TelemetryStream(conn.mq, META, settings)
    try:
        stalled[0].call(TELEMETRY, rpc.TelemetryCommand(settings=settings).SerializeToString(), META, end=False)
        stalled[1].call(FOLLOW, replication.FollowerState(applied_seq=0).SerializeToString(), end=False)
        conn.send_ok(message("t", b"a batch for the follower"))
        conn.create_group("waits")
        assert conn.receive("waits", "t", poll_s=0)[0] == pb.OK  # takes the one message
        assert conn.receive("waits", "t", poll_s=2.5)[0] == pb.MESSAGE_NOT_FOUND  # waited past the timeout
        wait_for(lambda: cancelled(broker, "Telemetry") and cancelled(broker, "Follow"), timeout=10)
        assert idle.next(5, "settings") is not None  # its reply, idle since
        idle.send(rpc.TelemetryCommand(settings=settings))
        assert idle.next(5, "settings") is not None  # still served
    finally:
        idle.close()
        for s in stalled:
            s.close()
        conn.close()
        broker.stop()
