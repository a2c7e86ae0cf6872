"""A name server's /metrics: the brokers it routes to and how recently each registered, the topics
they hold, and its calls' latency. Computed when scraped; bounded by the brokers registered."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rockmq.namesrv.registry import Registry
from rockmq.plumbing.rpc_latency import RPC_LATENCY


class NameServerMetrics(Collector):
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterator[Metric]:
        now_ms = int(time.time() * 1000)
        self.registry.expire(now_ms)
        brokers = self.registry.brokers()
        yield GaugeMetricFamily("rockmq_namesrv_brokers", "Brokers registered and heard from within the timeout",
                                value=len(brokers))
        since = GaugeMetricFamily("rockmq_namesrv_broker_registered_seconds", "Seconds since the broker last "
                                  "registered", labels=["broker"])
        for b in brokers:
            since.add_metric([b.name], max(0, now_ms - b.last_seen_ms) / 1000)
        yield since
        yield GaugeMetricFamily("rockmq_namesrv_topics", "Topics the registered brokers hold",
                                value=len({t.topic for b in brokers for t in b.topics}))
        yield RPC_LATENCY.family()
