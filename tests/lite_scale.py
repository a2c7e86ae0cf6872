"""N lite topics of one message each on one real `rockmq serve` (issue 29 §5), with the figures the
issue asks for: CI runs 20,000 (tests/integration/test_lite_scale.py), `scripts/chaos` a million
(tests/chaos/test_chaos_lite_scale.py); docs/lite-topics.md "Scale and cost" has the results.

The load is `rockmq bench --scenario produce-batch` (its own processes, the broker's CPU read from
/proc): `--lite-topics new` sends every message of a SendMessage to a lite topic of its own, which
that send creates, and the same bench without it sends as many messages of the same size and batch
to a NORMAL topic, in interleaved rounds, so the creation rate is a ratio to plain sends measured
on the same machine at the same time. Then:

- memory: the broker's RSS (VmRSS of it and its children, sampled all along) stays under the
  store's memory budget (`store_memory_mib`: RocksDB's memtables and block cache) plus RSS_ALLOWANCE_MIB
  for the rest (an idle broker, the lite name cache and position caches of at most 65,536 entries each,
  requests in flight, the allocator's free lists), however many lite topics exist;
- wake-up: a consumer subscribed to one lite topic (PARTIAL_ADD) is woken by a new message of it
  within WAKE_S while the N others exist;
- expiry: restarted with `--lite-topic-ttl 1`, the broker removes them all (the expiry walks
  2,048 lite topics a second: broker/lite/expiry.py), and, counted offline once it stopped, the
  parent's log range, traces and the lite family's names hold nothing.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from broker_process import BrokerProcess
from lite_wire import Lite, lite_message
from mqwire import Conn
from waiting import wait_for

from rockmq.bench.probe import broker_sample
from rockmq.config import Settings
from rockmq.protocol import admin, pb
from rockmq.store import keys
from rockmq.store.db import Store
from rockmq.store.schema import Family

PARENT, PLAIN, GROUP = "scale-lite", "scale-plain", "scale-lite-g"
BATCH = 64  # lite messages per SendMessage, each to its own lite topic
SIZE = 256  # body bytes
RSS_ALLOWANCE_MIB = 160  # beside the store's budget (module docstring); an idle broker takes ~75 MiB
WAKE_S = 1.0  # the long-poll wake time a new message must beat
WAKES = 5  # wake-ups measured
EXPIRY_STEP_PER_S = 2048  # broker/lite/expiry.py STEP per ROUND_S: what the expiry's wait is scaled by
RSS_SAMPLE_S = 0.5


@dataclass
class Figures:
    """What a run measured (printed, and asserted by the tests)."""

    count: int
    rounds: list[dict[str, Any]] = field(default_factory=list)  # per round: plain and lite bench figures, RSS after
    rss_peak_mib: float = 0.0
    rss_idle_mib: float = 0.0
    wakes_s: list[float] = field(default_factory=list)
    restart_s: float = 0.0
    expiry_s: float = 0.0
    left: dict[str, int] = field(default_factory=dict)  # keys of the parent counted offline after expiry

    @property
    def lite_per_s(self) -> float:
        return sum(r["lite"]["messages"] for r in self.rounds) / sum(r["lite"]["seconds"] for r in self.rounds)

    @property
    def plain_per_s(self) -> float:
        return sum(r["plain"]["messages"] for r in self.rounds) / sum(r["plain"]["seconds"] for r in self.rounds)

    @property
    def rate_ratio(self) -> float:
        """Lite topics created per second over plain messages stored per second."""
        return self.lite_per_s / self.plain_per_s

    def cpu_ratio(self) -> float:
        """The broker's CPU per lite message over per plain message (medians of the rounds)."""
        return (statistics.median(r["lite"]["broker_cpu_us_per_msg"] for r in self.rounds)
                / statistics.median(r["plain"]["broker_cpu_us_per_msg"] for r in self.rounds))

    def report(self) -> str:
        lines = [f"{self.count:,} lite topics of one {SIZE}-byte message, {BATCH} per SendMessage:"]
        lines += [f"  {round_line(i, r)}" for i, r in enumerate(self.rounds, 1)]
        lines += [f"  creation {self.lite_per_s:,.0f}/s vs plain {self.plain_per_s:,.0f} msg/s: {self.rate_ratio:.2f}x; "
                  f"broker CPU per message lite / plain {self.cpu_ratio():.2f}x",
                  f"  broker RSS idle {self.rss_idle_mib:.0f} MiB, peak {self.rss_peak_mib:.0f} MiB "
                  f"(bound {rss_bound_mib():.0f})",
                  f"  wake-ups of the one subscribed lite topic: {', '.join(f'{s * 1000:.0f}' for s in self.wakes_s)} ms",
                  f"  restart {self.restart_s:.1f} s; expiry of all of them {self.expiry_s:.1f} s "
                  f"({self.count / max(self.expiry_s, 1e-9):,.0f}/s); left offline: {self.left}"]
        return "\n".join(lines)


def round_line(number: int, r: dict[str, Any]) -> str:
    """One round's figures: plain and lite sends, lite topics so far, the broker's RSS."""
    return (f"round {number}: plain {r['plain']['messages_per_s']:9,.0f} msg/s {r['plain']['broker_cpu_us_per_msg']:6.1f} µs "
            f"CPU/msg, lite (new) {r['lite']['messages_per_s']:9,.0f} msg/s {r['lite']['broker_cpu_us_per_msg']:6.1f} µs "
            f"CPU/msg, {r['created']:,} lite topics, RSS {r['rss_mib']:.0f} MiB")


def rss_bound_mib() -> float:
    """The store's memory budget (the default `store_memory_mib`, as the test's broker runs) plus the allowance."""
    return Settings().store_memory_mib + RSS_ALLOWANCE_MIB


class RssPeak:
    """The broker's highest RSS, sampled by a thread every RSS_SAMPLE_S while the run lasts."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker, self.peak_mib = broker, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss", daemon=True)
        self._thread.start()

    def now_mib(self) -> float:
        proc = self.broker.proc
        sample = broker_sample(proc.pid) if proc is not None else None
        return sample.rss_mib if sample is not None else 0.0

    def _sample(self) -> None:
        while not self._stop.wait(RSS_SAMPLE_S):
            self.peak_mib = max(self.peak_mib, self.now_mib())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mib


def bench(broker: BrokerProcess, topic: str, messages: int, processes: int, *lite: str) -> dict[str, Any]:
    """`rockmq bench --scenario produce-batch` of `messages` to `topic` -> its figures."""
    assert broker.proc is not None
    cmd = [sys.executable, "-m", "rockmq", "bench", "--endpoint", broker.endpoint, "--broker-pid", str(broker.proc.pid),
           "--scenario", "produce-batch", "--topic", topic, "--messages", str(messages), "--batch", str(BATCH),
           "--size", str(SIZE), "--processes", str(processes), "--no-ceiling", "--json", *lite]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600 + messages / 500)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures: dict[str, Any] = json.loads(done.stdout)["scenarios"]["produce-batch"]
    return figures


def create(conn: Conn, rounds: int, per_round: int, processes: int, broker: BrokerProcess, rss: RssPeak) -> list[dict[str, Any]]:
    """`rounds` rounds of plain sends then as many lite topics created -> each round's figures."""
    done = []
    for _ in range(rounds):
        plain = bench(broker, PLAIN, per_round, processes)
        lite = bench(broker, PARENT, per_round, processes, "--lite-topics", "new")
        done.append({"plain": plain, "lite": lite, "created": conn.describe_topic(PARENT).lite_topic_count,
                     "rss_mib": rss.now_mib()})
        print(round_line(len(done), done[-1]), flush=True)
    return done


def wake_ups(conn: Conn) -> list[float]:
    """Seconds from the send of a message to its lite topic until the long-polling receive of the
    one client subscribed to it returns it, WAKES times."""
    consumer = Lite(conn, GROUP, PARENT, "scale-probe")
    assert consumer.sync(pb.PARTIAL_ADD, "probe").status.code == pb.OK
    took = []
    with ThreadPoolExecutor(1) as pool:
        for i in range(WAKES):
            parked = pool.submit(consumer.receive, 5.0)
            time.sleep(0.5)  # the receive waits
            sent = time.monotonic()
            conn.send_ok(lite_message(PARENT, "probe", f"wake-{i}"))
            got = parked.result(timeout=10)
            took.append(time.monotonic() - sent)
            assert [m.body.decode() for m in got] == [f"wake-{i}"], got
            consumer.ack(*got)
    return took


def parent_id(data: Path) -> int:
    """The LITE topic's id, from its counters in the lite family (the run's only LITE topic)."""
    store = Store(data)
    try:
        (key, _), *_ = store.scan_prefix(Family.LITE, keys.LITE_COUNT)
        return int.from_bytes(key[1:5], "big")
    finally:
        store.close()


def left_offline(data: Path, tid: int) -> dict[str, int]:
    """Keys the LITE topic still owns, counted with the broker stopped."""
    store = Store(data)
    try:
        return {"log": sum(1 for _ in store.scan_prefix(Family.LOG, keys.topic_prefix(tid))),
                "trace": sum(1 for _ in store.scan_prefix(Family.TRACE, keys.topic_prefix(tid))),
                "lite names": sum(1 for _ in store.scan_prefix(Family.LITE, keys.lite_names_prefix(tid))),
                "lite queues": sum(1 for _ in store.scan_prefix(Family.LITE, keys.lite_queues_prefix(tid)))}
    finally:
        store.close()


def expire(broker: BrokerProcess, count: int, figures: Figures) -> None:
    """Restart with a 1 s TTL and wait until the parent holds no lite topic."""
    broker.stop()
    broker.extra_args += ["--lite-topic-ttl", "1"]
    broker.env["ROCKMQ_RETENTION_CHECK_S"] = "1"  # the expiry's first pass starts within a second
    began = time.monotonic()
    broker.start(timeout=120)
    figures.restart_s = time.monotonic() - began
    print(f"restarted in {figures.restart_s:.1f} s with --lite-topic-ttl 1", flush=True)
    conn = Conn(broker.endpoint)
    try:
        began = time.monotonic()
        try:
            wait_for(lambda: conn.describe_topic(PARENT).lite_topic_count == 0, 60 + 4 * count / EXPIRY_STEP_PER_S, 0.5,
                     what="every lite topic expired")
        except grpc.RpcError as e:
            raise AssertionError(f"the broker stopped answering during expiry, {time.monotonic() - began:.0f} s in: {e}\n"
                                 + "\n".join(list(broker.log)[-20:])) from None
        figures.expiry_s = time.monotonic() - began
        print(f"expired in {figures.expiry_s:.1f} s", flush=True)
        listed = conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=PARENT), timeout=30)
        assert list(listed.lite_topics) == [] and not listed.more, listed
    finally:
        conn.close()
    broker.stop()


def run(tmp_path: Path, count: int, rounds: int, processes: int = 1) -> Figures:
    """The whole run against a broker of its own in `tmp_path` (module docstring)."""
    data = tmp_path / "data"
    broker = BrokerProcess(data, "--log-level", "WARNING").start()
    figures = Figures(count)
    rss = RssPeak(broker)
    try:
        figures.rss_idle_mib = rss.now_mib()
        conn = Conn(broker.endpoint)
        try:
            conn.create_topic(PLAIN, queues=8)
            conn.create_topic(PARENT, queues=8, types=("LITE",))
            figures.rounds = create(conn, rounds, count // rounds, processes, broker, rss)
            figures.wakes_s = wake_ups(conn)
            print(f"wake-ups {[round(w, 3) for w in figures.wakes_s]} s", flush=True)
            assert conn.describe_topic(PARENT).lite_topic_count == count + 1  # and the probe's
        finally:
            conn.close()
        expire(broker, count, figures)
    finally:
        figures.rss_peak_mib = rss.stop()
        broker.kill()
    figures.left = left_offline(data, parent_id(data))
    return figures
