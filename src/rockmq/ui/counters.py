"""What the dashboard reads of the broker's own counters (its /metrics text): messages stored, in total
and per topic, messages handed out, the bytes each broker's store holds, which groups hold a position on
which topic and their lag; the samples the alerts and the top lag read; and the rates between two
readings. Pure: the text comes in, numbers come out."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

MESSAGES_IN = "rocketmq_messages_in"
MESSAGES_OUT = "rocketmq_messages_out"
STORAGE = "rocketmq_storage_size"
LAG = "rocketmq_consumer_lag_messages"  # a series per topic and group the group holds a position on
LAG_MS = "rocketmq_consumer_lag_latency"
WINDOW_S = 10.0  # a rate is over the readings of about the last this many seconds
KEPT = 64  # readings kept (a reading every 2 s at most: well over WINDOW_S)


@dataclass(frozen=True)
class Reading:
    """Counters at one moment (`at`: monotonic seconds)."""

    at: float
    messages_in: float = 0.0
    by_topic: dict[str, float] = field(default_factory=dict)
    # Bytes on disk by broker name ("" for a broker's own unlabelled series: the one answering).
    storage: dict[str, float] = field(default_factory=dict)
    # Topic -> the groups with a position on it (on the brokers scraped: this one, or every shard).
    positions: dict[str, set[str]] = field(default_factory=dict)
    messages_out: float = 0.0  # handed out to consumers, user topics
    lag: float = 0.0  # every group's lag, summed
    # The samples of the names `read` was asked to keep (the alerts' and the top lag's), by sample name:
    # (labels, value). Only the newest reading of a RateMeter keeps them (`RateMeter.add`).
    series: dict[str, list[Sample]] = field(default_factory=dict)


Sample = tuple[dict[str, str], float]


def families(answer: Iterable[Metric] | bytes) -> Iterable[Metric]:
    """The metric families of a scrape: its text parsed (a `--workers` server's shards), or as collected."""
    return text_string_to_metric_families(answer.decode()) if isinstance(answer, bytes) else answer


def read(scraped: Iterable[Metric], at: float, keep: frozenset[str] = frozenset()) -> Reading:
    """The counters of a scrape's families; user topics only (is_system="false"); the samples named in `keep`."""
    total, by_topic, storage, positions = 0.0, dict[str, float](), dict[str, float](), dict[str, set[str]]()
    out = lag = 0.0
    series: dict[str, list[Sample]] = {}
    for family in scraped:
        for s in family.samples:
            if s.name in keep:
                series.setdefault(s.name, []).append((s.labels, s.value))
            user = s.labels.get("is_system") != "true"
            if s.name in (MESSAGES_IN, MESSAGES_IN + "_total") and user:
                total += s.value
                topic = s.labels.get("topic", "")
                by_topic[topic] = by_topic.get(topic, 0.0) + s.value
            elif s.name in (MESSAGES_OUT, MESSAGES_OUT + "_total") and user:
                out += s.value
            elif s.name == STORAGE:
                broker = s.labels.get("broker", "")
                storage[broker] = storage.get(broker, 0.0) + s.value
            elif s.name == LAG:
                positions.setdefault(s.labels.get("topic", ""), set()).add(s.labels.get("consumer_group", ""))
                lag += s.value
    return Reading(at, total, by_topic, storage, positions, out, lag, series)


@dataclass(frozen=True)
class Rates:
    """Messages in per second over the window, in total and per topic (empty before two readings)."""

    messages_in: float = 0.0
    by_topic: dict[str, float] = field(default_factory=dict)


class RateMeter:
    """The last readings (at most KEPT), and the rates from the oldest within the window to the newest."""

    def __init__(self) -> None:
        self.readings: deque[Reading] = deque(maxlen=KEPT)

    def add(self, reading: Reading) -> None:
        """Keep `reading`; the one it follows lets go of its series (the pages read the newest's only)."""
        if self.readings and self.readings[-1].series:
            self.readings[-1] = replace(self.readings[-1], series={})
        self.readings.append(reading)

    @property
    def latest(self) -> Reading | None:
        return self.readings[-1] if self.readings else None

    def rates(self) -> Rates:
        if len(self.readings) < 2:
            return Rates()
        new = self.readings[-1]
        old = next((r for r in self.readings if new.at - r.at <= WINDOW_S and r is not new), self.readings[-2])
        span = new.at - old.at
        if span <= 0:
            return Rates()
        by_topic = {t: rate(old.by_topic.get(t, 0.0), v, span) for t, v in new.by_topic.items()}
        return Rates(rate(old.messages_in, new.messages_in, span), by_topic)


def rate(old: float, new: float, span: float) -> float:
    """A counter's rate from `old` to `new` over `span` seconds (a counter that went down: the broker
    restarted, so it counts from zero)."""
    return (new - old if new >= old else new) / span
