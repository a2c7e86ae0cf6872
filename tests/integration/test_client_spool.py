"""The producer's durable retry spool against real processes: sends made while the broker is down
are spooled, survive a kill -9 of the producer, and a new producer process on the same spool
replays them once the broker is back — every message exactly once. With no broker ever, entries
end among the dead, handed to `on_dead`, and nothing is lost."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from broker_process import BrokerProcess
from mqwire import Conn

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message

N = 50

# Sends N messages (N - 10 one by one, then a batch of 10) and prints the receipts, then waits to be killed.
SPOOLING_PRODUCER = """
import asyncio, json, sys
from rockmq.client import AsyncProducer, Message

endpoint, spool_dir, topic, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

async def main():
    async with AsyncProducer(endpoint, spool_dir=spool_dir, spool_schedule_s=(600,), request_timeout=1.0,
                             delivery_timeout=0) as p:
        receipts = [await p.send(Message(topic, f"m{i}".encode())) for i in range(n - 10)]
        receipts += await p.send_batch([Message(topic, f"m{i}".encode()) for i in range(n - 10, n)])
        print(json.dumps([[r.message_id, r.spooled, r.broker, r.offset] for r in receipts]), flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""

# Opens the spool (which replays it), waits until it is drained, prints what is left.
REPLAYING_PRODUCER = """
import asyncio, json, sys
from rockmq.client import AsyncProducer

endpoint, spool_dir = sys.argv[1], sys.argv[2]

async def main():
    async with AsyncProducer(endpoint, spool_dir=spool_dir, spool_schedule_s=(0.2, 0.5)) as p:
        left = await p.drain_spool(10)
        print(json.dumps({"left": left, "dead": len(await p.dead_spool())}), flush=True)

asyncio.run(main())
"""


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _first_line(proc: subprocess.Popen[str], timeout: float = 15.0) -> str:
    """The process's first output line (the pipe is read on a thread so that a hang fails the test)."""
    import concurrent.futures

    assert proc.stdout is not None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            line = pool.submit(proc.stdout.readline).result(timeout)
        except concurrent.futures.TimeoutError:
            proc.kill()
            raise AssertionError(f"no output in {timeout} s: {proc.stderr.read() if proc.stderr else ''}") from None
    assert line, f"the producer exited: {proc.stderr.read() if proc.stderr else ''}"
    return line


async def _receive_all(endpoint: str, topic: str, group: str, want: int, within: float = 10.0) -> list[str]:
    ids: list[str] = []
    async with AsyncSimpleConsumer(endpoint, group, {topic: "*"}, await_s=1) as c:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            batch = await c.receive(32)
            for m in batch:
                await c.ack(m)
            ids += [m.message_id for m in batch]
            if len(ids) >= want and not batch:  # one empty poll after the last: nothing more comes
                break
    return ids


def test_spooled_sends_survive_a_producer_kill_and_are_replayed_once(tmp_path, unique):
    topic, group = unique("spool"), unique("spool-g")
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic(topic, queues=2)
        conn.close()
        broker.stop()

        spooling = _python(SPOOLING_PRODUCER, broker.endpoint, str(tmp_path / "spool"), topic, str(N))
        try:
            receipts = json.loads(_first_line(spooling))
        finally:
            spooling.kill()  # kill -9, mid-life
            spooling.wait()
        assert len(receipts) == N and all(spooled and b == "" and off == -1 for _, spooled, b, off in receipts)
        spooled_ids = [message_id for message_id, *_ in receipts]
        assert len(set(spooled_ids)) == N

        broker.start()  # the same port and data
        replaying = _python(REPLAYING_PRODUCER, broker.endpoint, str(tmp_path / "spool"))
        try:
            assert json.loads(_first_line(replaying)) == {"left": 0, "dead": 0}
            assert replaying.wait(10) == 0
        finally:
            replaying.kill()

        got = asyncio.run(_receive_all(broker.endpoint, topic, group, N))
        assert sorted(got) == sorted(spooled_ids), "a spooled message was lost or delivered twice"
    finally:
        broker.kill()


def test_with_no_broker_entries_go_dead_and_on_dead_is_told(tmp_path, unique):
    topic = unique("spool-dead")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        endpoint = f"127.0.0.1:{s.getsockname()[1]}"
    told: list[tuple[Message, Exception]] = []

    async def scenario():
        async with AsyncProducer(endpoint, spool_dir=tmp_path / "spool", spool_schedule_s=(0.2, 0.3), request_timeout=1.0,
                                 delivery_timeout=0,
                                 on_dead=lambda m, e: told.append((m, e))) as p:
            one = await p.send(Message(topic, b"one", keys=("k1",)))
            two = await p.send_batch([Message(topic, b"two"), Message(topic, b"three", tag="t")])
            assert one.spooled and all(r.spooled for r in two)
            assert await p.drain_spool(10) == 0
            dead = await p.dead_spool()
        assert sorted(e.message_ids for e in dead) == sorted([(one.message_id,), tuple(r.message_id for r in two)])
        assert all(e.topic == topic and e.attempts == 2 and "cannot reach" in e.error for e in dead)
        assert sorted(m.body for e in dead for m in e.messages) == [b"one", b"three", b"two"]
        assert sorted(m.body for m, _ in told) == [b"one", b"three", b"two"]
        assert all(m.topic == topic and "cannot reach" in str(e) for m, e in told)
        assert next(m for m, _ in told if m.body == b"one").keys == ("k1",)

        # The dead entries stay in the spool for the next process, until forgotten.
        async with AsyncProducer(endpoint, spool_dir=tmp_path / "spool") as p:
            again = await p.dead_spool()
            assert [e.id for e in again] == [e.id for e in dead]
            for e in again:
                await p.forget_dead(e.id)
            assert await p.dead_spool() == []

    asyncio.run(scenario())
