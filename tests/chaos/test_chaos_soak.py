"""The soak (issue 20): a broker under steady load with every kind of misbehaving client stays flat.

Half the produce capacity measured first in the same run, with consumers acking what arrives,
ReceiveMessage streams that are opened and never read (reopened every period), and clients that
connect, send one message and hang up. Every period the broker's RSS, its open file descriptors
and the p99 of the paced sends are recorded and printed; flat is the pass, and every message the
broker acknowledged must reach the consumers (lost = 0). CI runs it for seconds, `scripts/chaos`
for 30 minutes with a row a minute.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from broker_process import BrokerProcess  # tests/ is on sys.path (tests/conftest.py)
from chaos_scale import FULL, scaled
from mqwire import message

from rockmq.plumbing.channels import client_metadata, open_aio_channel
from rockmq.protocol import batch, batch_grpc, pb, rpc, svc

TOPIC, GROUP, STALLED_GROUP = "chaos-soak", "chaos-soak-consumers", "chaos-soak-stalled"
QUEUES = 4
BODY = 1024
BATCH = 32
IN_FLIGHT = 32
CAPACITY_S = scaled(2, 10)
SOAK_S = scaled(12, 1800)
PERIOD_S = scaled(3, 60)
STALLED_STREAMS = scaled(16, 200)
RECONNECTS_PER_S = 2
RETENTION_S = 300  # a steady state: the store keeps five minutes of messages, not the whole soak
RPC_TIMEOUT = 10.0
DRAIN_TIMEOUT_S = 60.0
SEQ = struct.Struct(">Q")  # each body starts with its message's sequence number
META = client_metadata("chaos-soak@" + socket.gethostname())


@dataclass
class Row:
    """One period's figures."""

    at_s: float
    rss_mib: float
    fds: int
    p99_ms: float
    sent_per_s: float
    consumed_per_s: float

    def __str__(self) -> str:
        return (f"{self.at_s:>6.0f} s  RSS {self.rss_mib:6.1f} MiB  fds {self.fds:4d}  send p99 {self.p99_ms:7.1f} ms  "
                f"sent {self.sent_per_s:8,.0f}/s  consumed {self.consumed_per_s:8,.0f}/s")


@dataclass
class Ledger:
    """What the broker acknowledged and what the consumers got, by sequence number."""

    size: int
    acked: bytearray = field(init=False)
    seen: bytearray = field(init=False)
    next_seq: int = 0
    consumed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.acked, self.seen = bytearray(self.size), bytearray(self.size)

    def messages(self, count: int) -> tuple[list[pb.Message], list[int]]:
        seqs = list(range(self.next_seq, self.next_seq + count))
        self.next_seq += count
        return [_message(seq) for seq in seqs], seqs

    def lost(self) -> int:
        return sum(1 for a, s in zip(self.acked, self.seen) if a and not s)

    def error(self, what: str) -> None:
        if len(self.errors) < 5:
            self.errors.append(what)


def _message(seq: int) -> pb.Message:
    return message(TOPIC, SEQ.pack(seq) + os.urandom(BODY - SEQ.size))


def _broker_rss_fds(pid: int) -> tuple[float, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return rss_kib / 1024, len(os.listdir(f"/proc/{pid}/fd"))


async def _send(stub: svc.MessagingServiceStub, ledger: Ledger, count: int) -> bool:
    messages, seqs = ledger.messages(count)
    begin = time.perf_counter()
    try:
        reply = await stub.SendMessage(rpc.SendMessageRequest(messages=messages), metadata=META, timeout=RPC_TIMEOUT)
    except grpc.aio.AioRpcError as exc:
        ledger.error(f"SendMessage {exc.code().name}: {exc.details()}")
        return False
    ledger.latencies_ms.append((time.perf_counter() - begin) * 1000)
    for seq, entry in zip(seqs, reply.entries):
        if entry.status.code == pb.OK:
            ledger.acked[seq] = 1
        else:
            ledger.error(f"SendMessage {pb.Code.Name(entry.status.code)}: {entry.status.message}")
    return reply.status.code == pb.OK


async def _capacity(endpoint: str, ledger: Ledger) -> float:
    """Messages per second this driver gets stored with IN_FLIGHT batches and nothing else running."""
    channel = open_aio_channel(endpoint)
    stub = svc.MessagingServiceStub(channel)
    deadline = time.monotonic() + CAPACITY_S
    stored = 0

    async def sender() -> None:
        nonlocal stored
        while time.monotonic() < deadline:
            if await _send(stub, ledger, BATCH):
                stored += BATCH

    begin = time.monotonic()
    await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
    await channel.close()
    return stored / (time.monotonic() - begin)


async def _paced_producer(stub: svc.MessagingServiceStub, ledger: Ledger, rate: float, stop: asyncio.Event) -> None:
    """Batches of BATCH at `rate` messages/s; a late slot is skipped, not sent in a burst."""
    interval, next_at = BATCH / rate, time.monotonic()
    pending: set[asyncio.Task[bool]] = set()
    while not stop.is_set():
        now = time.monotonic()
        if now < next_at:
            await asyncio.sleep(next_at - now)
            continue
        if len(pending) < IN_FLIGHT:
            task = asyncio.create_task(_send(stub, ledger, BATCH))
            pending.add(task)
            task.add_done_callback(pending.discard)
        next_at = max(next_at + interval, now)
    if pending:
        await asyncio.wait(pending)


async def _consumer(stub: batch_grpc.BatchMessagingStub, ledger: Ledger, done: asyncio.Event) -> None:
    request = batch.ReceiveRequest(group=GROUP, topic=TOPIC, batch_size=128, invisible_duration_ms=30_000,
                                   filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
                                   long_polling_timeout_ms=500)
    while not done.is_set():
        try:
            reply = await stub.Receive(request, metadata=META, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:
            ledger.error(f"Receive {exc.code().name}: {exc.details()}")
            await asyncio.sleep(0.1)
            continue
        if reply.status.code != pb.OK:
            continue
        handles = []
        for raw in reply.messages:
            msg = pb.Message.FromString(raw)
            seq = SEQ.unpack_from(msg.body)[0]
            if not ledger.seen[seq]:
                ledger.seen[seq] = 1
                ledger.consumed += 1
            handles.append(msg.system_properties.receipt_handle)
        try:
            ack = batch.AckRequest(group=GROUP, topic=TOPIC, receipt_handles=handles)
            await stub.Ack(ack, metadata=META, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as exc:  # not acked: the messages come again after their invisible time
            ledger.error(f"Ack {exc.code().name}: {exc.details()}")


async def _stalled_streams(endpoint: str, stop: asyncio.Event) -> None:
    """STALLED_STREAMS ReceiveMessage streams of 32 that nobody reads, opened afresh every period."""
    request = rpc.ReceiveMessageRequest(
        group=pb.Resource(name=STALLED_GROUP), message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC)),
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"), batch_size=32,
        invisible_duration={"seconds": 30}, long_polling_timeout={"seconds": 20})
    while not stop.is_set():
        channel = open_aio_channel(endpoint)
        stub = svc.MessagingServiceStub(channel)
        calls = [stub.ReceiveMessage(request, metadata=META, timeout=PERIOD_S + RPC_TIMEOUT) for _ in range(STALLED_STREAMS)]
        try:
            await asyncio.wait_for(stop.wait(), PERIOD_S)
        except TimeoutError:
            pass
        for call in calls:
            call.cancel()
        await channel.close()


async def _reconnecting_clients(endpoint: str, ledger: Ledger, stop: asyncio.Event) -> None:
    """RECONNECTS_PER_S times a second: a new connection sends one message and hangs up."""
    while not stop.is_set():
        channel = open_aio_channel(endpoint)
        await _send(svc.MessagingServiceStub(channel), ledger, 1)
        await channel.close()
        try:
            await asyncio.wait_for(stop.wait(), 1 / RECONNECTS_PER_S)
        except TimeoutError:
            pass


async def _soak(broker: BrokerProcess) -> tuple[float, list[Row], Ledger]:
    ledger = Ledger(size=64_000_000 if FULL else 4_000_000)
    capacity = await _capacity(broker.endpoint, ledger)
    assert broker.proc is not None
    pid = broker.proc.pid
    channel = open_aio_channel(broker.endpoint)
    stub, batch_stub = svc.MessagingServiceStub(channel), batch_grpc.BatchMessagingStub(channel)
    stop, drained = asyncio.Event(), asyncio.Event()
    load = [asyncio.create_task(_paced_producer(stub, ledger, capacity / 2, stop)),
            asyncio.create_task(_stalled_streams(broker.endpoint, stop)),
            asyncio.create_task(_reconnecting_clients(broker.endpoint, ledger, stop))]
    consumers = [asyncio.create_task(_consumer(batch_stub, ledger, drained)) for _ in range(2)]
    rows: list[Row] = []
    begin = time.monotonic()
    while (elapsed := time.monotonic() - begin) < SOAK_S:
        sent, consumed = len(ledger.latencies_ms), ledger.consumed
        await asyncio.sleep(PERIOD_S)
        latencies = ledger.latencies_ms[sent:]
        rss, fds = _broker_rss_fds(pid)
        rows.append(Row(round(elapsed + PERIOD_S), rss, fds,
                        statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else 0.0,
                        len(latencies) * BATCH / PERIOD_S, (ledger.consumed - consumed) / PERIOD_S))
        print(f"soak {rows[-1]}", flush=True)  # a row a period, as it happens (-s)
    stop.set()
    await asyncio.gather(*load)
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while ledger.lost() and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    drained.set()
    await asyncio.gather(*consumers)
    await channel.close()
    return capacity, rows, ledger


def test_soak_stays_flat_and_loses_nothing(tmp_path: Path) -> None:
    retention = {"ROCKMQ_RETENTION_S": str(RETENTION_S), "ROCKMQ_RETENTION_CHECK_S": "10"}
    broker = BrokerProcess(tmp_path / "data", env=retention).start()
    try:
        broker.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        capacity, rows, ledger = asyncio.run(_soak(broker))
    finally:
        broker.stop()
    acked = sum(ledger.acked)
    print(f"soak: capacity {capacity:,.0f} msg/s, paced at half; acked {acked:,}, consumed {ledger.consumed:,}, "
          f"lost {ledger.lost()}; first {rows[0]}; last {rows[-1]}")
    assert ledger.lost() == 0, f"{ledger.lost()} acknowledged messages never reached a consumer; errors: {ledger.errors}"
    assert acked > 0 and rows
    settled = rows[len(rows) // 3:]  # RocksDB's memtables and caches fill during the first third
    first, last = settled[0], max(settled, key=lambda row: row.rss_mib)
    assert last.rss_mib <= first.rss_mib * 1.2 + 32, f"RSS grew: {first.rss_mib:.0f} → {last.rss_mib:.0f} MiB"
    # RocksDB's table files come and go with flushes and compactions; a leak of sockets or files grows without end.
    assert max(row.fds for row in settled) <= first.fds * 1.25 + 16, f"fds grew: {[row.fds for row in rows]}"
    if FULL:  # a few seconds of p99s say nothing about a trend
        assert settled[-1].p99_ms <= max(2 * first.p99_ms, first.p99_ms + 20), f"p99 grew: {[row.p99_ms for row in rows]}"
