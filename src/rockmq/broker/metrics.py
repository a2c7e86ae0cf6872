"""The broker's /metrics (docs/operations.md "Metrics"): RocketMQ 5's metric names and labels, so its
Grafana dashboards and alert rules carry over, plus rockmq's own (replication, limits).

Nothing here runs per message. Counters are the plain ints the services keep (broker/tally.py), read
when scraped; gauges (lag, in flight, storage, timers, connections...) are computed when scraped and
kept `CACHE_S`, so scrapes from several Prometheus servers cost one computation. Cardinality is
bounded: series exist only for topics and groups the broker holds (max_topics, max_groups), lag only
for a (topic, group) where the group has a position on the topic, and each metric holds at most
`MAX_SERIES` series (the rest summed into `rockmq_metrics_series_dropped`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from rockmq.broker.clients import Clients
from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.positions import Positions
from rockmq.broker.stalled_streams import StalledStreams
from rockmq.broker.tally import SIZE_BUCKETS
from rockmq.broker.timers import LATENESS_BOUNDS_MS, TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.plumbing.connection_limits import open_sockets
from rockmq.plumbing.rpc_latency import RPC_LATENCY
from rockmq.protocol import pb, records
from rockmq.protocol.conventions import RETRY_PREFIX
from rockmq.store.disk_space import free_bytes
from rockmq.store.schema import Family
from rockmq.units import MiB

CACHE_S = 5.0  # gauges computed at most this often
STEP = 50  # groups (or topics) computed between two turns of the loop's other work
MAX_SERIES = 10_000  # series one metric holds at most
TYPES = {"NORMAL": "normal", "FIFO": "fifo", "DELAY": "delay", "TRANSACTION": "transaction"}
PRODUCERS = frozenset({pb.PRODUCER})
UNKNOWN = "unknown"  # a client's language or version it has not said


class Replicas(Protocol):
    """A primary's replicas as the Replicator sees them."""

    def replica_lags(self, now: float) -> dict[str, tuple[int, float]]: ...


def _flags(topic: str) -> tuple[str, str]:
    """(is_retry, is_system) of a topic, as RocketMQ labels them."""
    return str(topic.startswith(RETRY_PREFIX)).lower(), str(topic.startswith("%")).lower()


@dataclass
class Bounded:
    """A family that takes at most MAX_SERIES samples; those past it are counted, not kept."""

    family: GaugeMetricFamily | CounterMetricFamily
    dropped: int = 0

    def add(self, labels: list[str], value: float) -> None:
        if len(self.family.samples) >= MAX_SERIES:
            self.dropped += 1
            return
        self.family.add_metric(labels, value)


class BrokerMetrics(Collector):
    def __init__(self, ctx: BrokerContext, positions: Positions, clients: Clients, timers: TimerService,
                 transactions: TransactionService, streams: StalledStreams, replicas: Callable[[], Replicas | None]) -> None:
        self.ctx = ctx
        self.positions = positions
        self.clients = clients
        self.timers = timers
        self.transactions = transactions
        self.streams = streams
        self.replicas = replicas  # the Replicator (None: not a replicating primary)
        self._gauges: list[Metric] = []
        self._computed = -CACHE_S
        self._dropped = 0  # gauge series left out at the last computation
        self._computing: asyncio.Future[None] | None = None

    def describe(self) -> Iterable[Metric]:
        return ()  # registered without a scrape: the families are known when collected

    async def refresh(self) -> None:
        """Compute the gauges again if they are older than CACHE_S, before a scrape `collect`s them: one
        computation for the scrapes that come meanwhile, handing the loop back every STEP groups or
        topics, so the broker goes on serving while a large one runs."""
        if time.monotonic() - self._computed < CACHE_S:
            return
        if self._computing is None or self._computing.done():
            self._computing = asyncio.ensure_future(self._compute())
        await asyncio.shield(self._computing)

    async def _compute(self) -> None:
        lag, dropped = await self._lag()
        connections = self._connections()
        self._gauges = [*lag, *self._counts(), *self._storage(), GaugeMetricFamily(
            "rocketmq_storage_message_reserve_time", "ms since the store time of the oldest message kept",
            value=await self._reserve_ms()), *(b.family for b in connections), *self._limits(), *self._replication()]
        self._dropped = dropped + sum(b.dropped for b in connections)
        self._computed = time.monotonic()

    def collect(self) -> Iterator[Metric]:
        """The counters as they are now, the gauges as `refresh` last computed them."""
        dropped = self._dropped
        for bounded in self._counters():
            dropped += bounded.dropped
            yield bounded.family
        yield self._sizes()
        yield RPC_LATENCY.family()
        yield from self._gauges
        yield GaugeMetricFamily("rockmq_metrics_series_dropped", "Series left out of the last scrape past the "
                                "per-metric cap", value=dropped)

    async def totals(self, with_lag: bool) -> tuple[int, int, int | None]:
        """(messages stored, messages handed out, on user topics; every group's lag summed if `with_lag`):
        the dashboard's charts read these every few seconds (ui/history.py), whether or not anyone looks,
        so without a scrape's per-series work: no labels, no store-time reads, the loop handed back every
        STEP groups."""
        tally = self.ctx.tally
        stored = sum(n for (tid, _), n in tally.messages_in.items() if self._user(tid))
        handed_out = sum(n for (tid, _), n in tally.messages_out.items() if self._user(tid))
        if not with_lag:
            return stored, handed_out, None
        lag = 0
        for i, group in enumerate(list(self.ctx.meta.groups.values())):
            if i % STEP == STEP - 1:
                await asyncio.sleep(0)
            lag += sum(p.lag for p in self.positions.of(group))
        return stored, handed_out, lag

    def _user(self, topic_id: int) -> bool:
        topic = self._topic(topic_id)
        return topic is not None and _flags(topic)[1] == "false"

    # --- counters: what the services counted -------------------------------------------------------

    def _topic(self, topic_id: int) -> str | None:
        topic = self.ctx.meta.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    def _counters(self) -> Iterator[Bounded]:
        tally = self.ctx.tally
        for name, doc, counts in (("rocketmq_messages_in", "Messages stored", tally.messages_in),
                                  ("rocketmq_throughput_in", "Bytes of message bodies stored", tally.bytes_in)):
            family = Bounded(CounterMetricFamily(name, doc, labels=["topic", "message_type", "is_system"]))
            for (tid, mtype), n in counts.items():
                if (topic := self._topic(tid)) is not None:
                    family.add([topic, TYPES.get(mtype, mtype.lower()), _flags(topic)[1]], n)
            yield family
        for name, doc, counts in (("rocketmq_messages_out", "Messages handed out to consumers", tally.messages_out),
                                  ("rocketmq_throughput_out", "Bytes handed out to consumers", tally.bytes_out)):
            family = Bounded(CounterMetricFamily(name, doc, labels=["topic", "consumer_group", "is_retry", "is_system"]))
            for (tid, group), n in counts.items():
                if (topic := self._topic(tid)) is not None:
                    family.add([topic, group, *_flags(topic)], n)
            yield family
        dlq = Bounded(CounterMetricFamily("rocketmq_send_to_dlq_messages", "Messages moved to a dead-letter queue",
                                          labels=["topic", "consumer_group"]))
        for (tid, group), n in tally.dead_letters.items():
            if (topic := self._topic(tid)) is not None:
                dlq.add([topic, group], n)
        yield dlq
        for name, doc, ended in (("rocketmq_commit_messages", "Transactional messages committed", tally.commits),
                                 ("rocketmq_rollback_messages", "Transactional messages rolled back", tally.rollbacks)):
            family = Bounded(CounterMetricFamily(name, doc, labels=["topic"]))
            for tid, n in ended.items():
                if (topic := self._topic(tid)) is not None:
                    family.add([topic], n)
            yield family
        yield Bounded(CounterMetricFamily("rockmq_streams_cancelled", "Server streams cancelled: their client read "
                                          "nothing for stream_send_timeout_s", value=self.streams.cancelled))
        yield Bounded(CounterMetricFamily("rockmq_sends_refused_disk_full", "Sends refused for want of disk space",
                                          value=self.ctx.store.space.refused))

    def _sizes(self) -> HistogramMetricFamily:
        tally = self.ctx.tally
        return _histogram("rocketmq_message_size", "Sizes of the message bodies stored (bytes)", SIZE_BUCKETS,
                          tally.sizes, tally.size_sum)

    # --- gauges: computed when scraped ---------------------------------------------------------------

    def _counts(self) -> Iterator[Metric]:
        meta = self.ctx.meta
        yield GaugeMetricFamily("rocketmq_topic_number", "Topics", value=len(meta.topics))
        yield GaugeMetricFamily("rocketmq_consumer_group_number", "Consumer groups", value=len(meta.groups))
        yield GaugeMetricFamily("rocketmq_timing_messages", "Delayed messages waiting for their time",
                                value=self.timers.pending.value)
        late = self.timers.lateness
        yield _histogram("rocketmq_delay_message_latency", "How late delayed messages entered their queues (ms)",
                         LATENESS_BOUNDS_MS, late.counts, late.total_ms)
        yield GaugeMetricFamily("rocketmq_half_messages", "Transactional messages not committed or rolled back yet",
                                value=self.transactions.pending.value)

    async def _lag(self) -> tuple[list[Metric], int]:
        """The rocketmq_consumer_* gauges -> (their families, the series left out past MAX_SERIES)."""
        labels = ["topic", "consumer_group", "is_retry", "is_system"]
        lag, latency, inflight, ready = (Bounded(GaugeMetricFamily(name, doc, labels=labels)) for name, doc in (
            ("rocketmq_consumer_lag_messages", "Messages the group has not acknowledged (ready + in flight)"),
            ("rocketmq_consumer_lag_latency", "ms since the store time of the oldest message the group has not "
                                              "acknowledged"),
            ("rocketmq_consumer_inflight_messages", "Messages handed out and not acknowledged, or waiting for redelivery"),
            ("rocketmq_consumer_ready_messages", "Messages stored and not handed out to the group yet")))
        now = now_ms()
        for i, group in enumerate(list(self.ctx.meta.groups.values())):
            if i % STEP == STEP - 1:
                await asyncio.sleep(0)
            for t in self.positions.lags(group):
                values = [t.topic.name, group.name, *_flags(t.topic.name)]
                lag.add(values, t.ready + t.inflight)
                latency.add(values, t.latency_ms(now))
                inflight.add(values, t.inflight)
                ready.add(values, t.ready)
        return [b.family for b in (lag, latency, inflight, ready)], lag.dropped

    def _storage(self) -> Iterator[Metric]:
        store = self.ctx.store
        yield GaugeMetricFamily("rocketmq_storage_size", "Bytes the store holds on disk",
                                value=sum(store.size(f) for f in Family))
        space = store.space
        yield GaugeMetricFamily("rockmq_disk_free_bytes", "Free bytes on the store's disk", value=free_bytes(space.path))
        yield GaugeMetricFamily("rockmq_disk_reserve_bytes", "Free bytes kept: below them sends are refused",
                                value=self.ctx.settings.disk_reserve_mib * MiB)
        yield GaugeMetricFamily("rockmq_disk_full", "1 while sends are refused for want of disk space",
                                value=int(space.full))

    async def _reserve_ms(self) -> int:
        """Age of the oldest message of any queue (each queue's first kept: one read per queue)."""
        logs = self.ctx.logs
        oldest = 0
        for i, topic in enumerate(list(self.ctx.meta.topics.values())):
            if i % STEP == STEP - 1:
                await asyncio.sleep(0)
            for q in range(topic.queues):
                end = logs.max_offset(topic.id, q)  # cached: a queue never written costs no seek
                if end == 0 or end <= logs.min_offset(topic.id, q):
                    continue
                record = logs.read(topic.id, q, logs.min_offset(topic.id, q))
                if record is not None and (not oldest or records.store_ms(record) < oldest):
                    oldest = records.store_ms(record)
        return max(0, now_ms() - oldest) if oldest else 0

    def _connections(self) -> list[Bounded]:
        """Client sessions by language and version: values the clients name, so capped (MAX_SERIES) like lag."""
        producers: dict[tuple[str, ...], int] = {}
        consumers: dict[tuple[str, ...], int] = {}
        for session in list(self.clients.sessions.values()):
            counts = producers if session.client_type in PRODUCERS else consumers
            key = (session.language or UNKNOWN, session.version or UNKNOWN)
            counts[key] = counts.get(key, 0) + 1
        out = []
        for name, counts in (("rocketmq_producer_connections", producers), ("rocketmq_consumer_connections", consumers)):
            family = Bounded(GaugeMetricFamily(name, "Client sessions by language and version", labels=["language", "version"]))
            for labels, n in counts.items():
                family.add(list(labels), n)
            out.append(family)
        return out

    def _limits(self) -> Iterator[Metric]:
        limits = self.ctx.settings.connection_limits
        limit = limits.connections
        sockets = open_sockets(0)
        yield GaugeMetricFamily("rockmq_connections", "Sockets the process holds (connections, listeners)",
                                value=sockets)
        yield GaugeMetricFamily("rockmq_connections_max", "max_connections: past it new connections are closed",
                                value=limit)
        yield GaugeMetricFamily("rockmq_connections_refusing", "1 while new connections are refused (max_connections "
                                "reached)", value=int(sockets >= limit))

    def _replication(self) -> Iterator[Metric]:
        replicator = self.replicas()
        lags = replicator.replica_lags(time.time()) if replicator is not None else {}
        yield _gauge("rockmq_replica_lag_messages", "Messages the replica has not applied", ["replica"],
                     (((r,), lag[0]) for r, lag in lags.items()))
        yield _gauge("rockmq_replica_lag_seconds", "Seconds since the oldest write the replica has not applied was "
                     "made", ["replica"], (((r,), lag[1]) for r, lag in lags.items()))


def _gauge(name: str, doc: str, labels: list[str], values: Iterable[tuple[Sequence[str], float]]) -> GaugeMetricFamily:
    """A gauge of (label values, value) pairs."""
    family = GaugeMetricFamily(name, doc, labels=labels)
    for key, value in values:
        family.add_metric(list(key), value)
    return family


def _histogram(name: str, doc: str, bounds: Iterable[float], counts: list[int], total: float) -> HistogramMetricFamily:
    """A histogram of per-bucket (not cumulative) counts, the last past every bound."""
    cumulative, running = [], 0
    for bound, n in zip((*(str(float(b)) for b in bounds), "+Inf"), counts, strict=True):
        running += n
        cumulative.append((bound, running))
    return HistogramMetricFamily(name, doc, buckets=cumulative, sum_value=total)
