"""SIGTERM drains a broker of a cluster (broker/server.py, Broker.drain): the name server drops it at
once (Unregister, not its timeout), rockmq's producer sending meanwhile moves to the other broker
without a failed send, nothing acknowledged is lost, and the process exits 0 well within the drain
timeout."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import Cluster, _running, start_cluster
from shard_set import ShardSet
from waiting import async_wait_for, wait_for

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, SendReceipt

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import producer, send  # noqa: E402

NAMESRV_TIMEOUT_S = 60  # the name server would keep a silent broker this long: only Unregister drops it sooner


@pytest.fixture
def pair(tmp_path: Path):
    """Two brokers and a name server that would keep a silent broker NAMESRV_TIMEOUT_S."""
    yield from _running(start_cluster(tmp_path, ("b1", "b2"), broker_timeout_s=NAMESRV_TIMEOUT_S))


def test_sigterm_drains_without_a_failed_send(pair: Cluster):
    cluster = pair
    b1 = cluster.brokers["b1"]
    b1.cli("topic", "create", "dr", "--queues", "4", check=True)
    receipts: list[SendReceipt] = []
    failures: list[BaseException] = []
    timings: dict[str, float] = {}

    async def keep_sending(p: AsyncProducer, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            try:
                receipts.append(await p.send(Message("dr", f"m{i}".encode())))
            except Exception as e:  # noqa: BLE001 - every failure is the test's finding
                failures.append(e)
            i += 1
            await asyncio.sleep(0.005)

    async def scenario() -> None:
        ends = ",".join(b.endpoint for b in cluster.brokers.values())
        async with AsyncProducer(ends, request_timeout=5.0) as p:
            stop = asyncio.Event()
            sending = asyncio.create_task(keep_sending(p, stop))
            await async_wait_for(lambda: {r.broker for r in receipts} == {"b1", "b2"}, 10, 0.05,
                                 what="sends reaching both brokers")
            assert b1.proc is not None
            started = time.monotonic()
            b1.proc.send_signal(signal.SIGTERM)
            await async_wait_for(lambda: "b1" not in cluster.live_brokers(), 5, 0.05, what="b1 out of ListBrokers")
            timings["unlisted"] = time.monotonic() - started
            while b1.proc.poll() is None and time.monotonic() - started < 20:
                await asyncio.sleep(0.05)
            timings["exited"] = time.monotonic() - started
            after = len(receipts)
            await async_wait_for(lambda: len(receipts) >= after + 50, 10, 0.05, what="sends after the drain")
            stop.set()
            await sending

    asyncio.run(scenario())
    assert not failures, f"{len(failures)} sends failed, the first: {failures[0]!r}"
    assert timings["unlisted"] < 3, f"b1 left ListBrokers only after {timings['unlisted']:.1f} s"
    assert b1.proc is not None and b1.proc.poll() == 0, "the drained broker did not exit 0"
    assert timings["exited"] < 10, f"the drain took {timings['exited']:.1f} s"
    assert {r.broker for r in receipts[-50:]} == {"b2"}
    b1.proc = None
    b1.start()  # on its data dir: what it acknowledged is there
    cluster.wait_for_brokers({"b1", "b2"})
    assert {r.message_id for r in receipts} <= cluster.stored_ids("dr")


def test_a_simple_consumer_receives_through_a_drain_without_an_error(pair: Cluster):
    """rockmq's SimpleConsumer receiving while b1 drains: the drained broker is passed over, no
    receive raises, and what b1 held is received once it is back."""
    pair.brokers["b1"].cli("topic", "create", "cd", "--queues", "4", check=True)
    ends = ",".join(b.endpoint for b in pair.brokers.values())
    errors: list[BaseException] = []
    got: set[bytes] = set()

    async def receive_for(c: AsyncSimpleConsumer, seconds: float, upto: int = 100) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until and len(got) < upto:
            try:
                for m in await c.receive(5):
                    got.add(m.body)
                    await c.ack(m)
            except Exception as e:  # noqa: BLE001 - every failure is the test's finding
                errors.append(e)

    async def scenario() -> None:
        async with AsyncProducer(ends) as p:
            for i in range(100):
                await p.send(Message("cd", f"m{i}".encode()))
        async with AsyncSimpleConsumer(ends, "cd-g", {"cd": "*"}, await_s=0.5) as c:
            await receive_for(c, 5, upto=10)  # most are still on both brokers when b1 drains
            b1 = pair.brokers["b1"]
            assert b1.proc is not None
            b1.proc.send_signal(signal.SIGTERM)
            await receive_for(c, 3)
            assert len(got) < 100, "b1's share was received while it drained"
            assert b1.proc.wait(10) == 0
            b1.proc = None
            b1.start()
            await receive_for(c, 10)

    asyncio.run(scenario())
    assert not errors, f"{len(errors)} receives failed, the first: {errors[0]!r}"
    assert got == {f"m{i}".encode() for i in range(100)}


def test_the_official_client_sends_through_a_drain_without_a_failure(pair: Cluster):
    """The unmodified official Python client, pointed at b2, sending while b1 drains: the refusal
    (PROXY_TIMEOUT) is one it retries on another broker."""
    pair.brokers["b1"].cli("topic", "create", "od", "--queues", "4", check=True)
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with producer(pair.brokers["b2"].endpoint, "od") as p:
            i = 0
            while not stop.is_set():
                try:
                    acked.append(send(p, "od", f"x{i}".encode()).message_id)
                except Exception as e:  # noqa: BLE001 - every failure is the test's finding
                    failed.append(repr(e))
                i += 1

    sending = threading.Thread(target=produce)
    sending.start()
    b1 = pair.brokers["b1"]
    try:
        wait_for(lambda: len(acked) >= 50, 15, what="the producer sending")
        assert b1.proc is not None
        b1.proc.send_signal(signal.SIGTERM)
        assert b1.proc.wait(10) == 0
        before = len(acked)
        wait_for(lambda: len(acked) >= before + 50, 10, what="sends after the drain")
    finally:
        stop.set()
        sending.join(30)
    assert not failed, f"{len(failed)} sends failed, the first: {failed[0]}"
    b1.proc = None
    b1.start()
    pair.wait_for_brokers({"b1", "b2"})
    assert set(acked) <= pair.stored_ids("od")


def test_sigterm_to_a_workers_server_drains_every_shard(tmp_path: Path):
    shards = ShardSet(tmp_path / "data", 2, "--drain-timeout", "10").start()
    try:
        started = time.monotonic()
        assert shards.signal_and_wait(signal.SIGTERM) == 0
        assert time.monotonic() - started < 10
        assert sum("draining (at most 10 s)" in line for line in shards.log) == 2, "\n".join(shards.log)
    finally:
        shards.kill()
