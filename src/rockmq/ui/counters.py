"""What the dashboard reads of the broker's own counters (its /metrics text): messages stored, in total
and per topic, the bytes each broker's store holds and which groups hold a position on which topic;
and the rates between two readings. Pure: the text comes in, numbers come out."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

MESSAGES_IN = "rocketmq_messages_in"
STORAGE = "rocketmq_storage_size"
LAG = "rocketmq_consumer_lag_messages"  # a series per topic and group the group holds a position on
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


def read(text: str, at: float) -> Reading:
    """The counters of a scrape's text; user topics only (is_system="false")."""
    total, by_topic, storage, positions = 0.0, dict[str, float](), dict[str, float](), dict[str, set[str]]()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in (MESSAGES_IN, MESSAGES_IN + "_total") and s.labels.get("is_system") != "true":
                total += s.value
                topic = s.labels.get("topic", "")
                by_topic[topic] = by_topic.get(topic, 0.0) + s.value
            elif s.name == STORAGE:
                broker = s.labels.get("broker", "")
                storage[broker] = storage.get(broker, 0.0) + s.value
            elif s.name == LAG:
                positions.setdefault(s.labels.get("topic", ""), set()).add(s.labels.get("consumer_group", ""))
    return Reading(at, total, by_topic, storage, positions)


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
        # A counter that went down (the broker restarted) counts from zero.
        by_topic = {t: _rate(old.by_topic.get(t, 0.0), v, span) for t, v in new.by_topic.items()}
        return Rates(_rate(old.messages_in, new.messages_in, span), by_topic)


def _rate(old: float, new: float, span: float) -> float:
    return (new - old if new >= old else new) / span
