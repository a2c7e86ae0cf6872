"""rockmq's alert rules, written once: deploy/prometheus/rules.yml is generated from RULES
(`python scripts/gen_rules.py`; tests/unit/test_ui_alerts.py checks the file is current), and the
overview shows which of them would fire, evaluated here against the broker's own counters.

A rule is a few conditions joined by `or`, each a sample of /metrics (or its increase over a window)
compared with a threshold, or with a threshold times another sample of the same labels: the few shapes
the rules need, so evaluating them needs no PromQL engine. "Would fire" means the condition holds now;
Prometheus fires once it has held for the rule's `for`. An increase is over the counters the dashboard
read within the window (`Baselines`: read while someone looks), so after a quiet spell it covers less
than the window. Pure."""

from __future__ import annotations

import json
import operator
import re
from collections import deque
from dataclasses import dataclass

from rockmq.ui.counters import Sample

SNAPSHOT_S = 30.0  # an increase's baseline: counters kept at most this often
HEADER = """\
# Alert rules over rockmq's /metrics (docs/operations.md "Metrics"). RocketMQ 5's metric names where
# RocketMQ has one (rocketmq_*), rockmq's own for replication and limits (rockmq_*). Load with
# `rule_files: [rules.yml]`; tune the thresholds to your traffic.
# Generated from src/rockmq/ui/alerts.py (python scripts/gen_rules.py): the dashboard's overview shows which
# of these would fire, from the same table.
"""
OPS = {">": operator.gt, "<": operator.lt, "==": operator.eq}
WINDOW = re.compile(r"(\d+)([smh])")


@dataclass(frozen=True)
class Condition:
    metric: str  # a sample's name as /metrics serves it (a counter's with _total)
    op: str  # ">", "<" or "=="
    threshold: float
    times: str = ""  # compare with threshold * this sample of the same labels
    increase: str = ""  # compare the metric's increase over this window ("10m")

    def promql(self) -> str:
        left = f"increase({self.metric}[{self.increase}])" if self.increase else self.metric
        right = f"{self.threshold:g} * {self.times}" if self.times else f"{self.threshold:g}"
        return f"{left} {self.op} {right}"


@dataclass(frozen=True)
class Rule:
    alert: str
    conditions: tuple[Condition, ...]  # joined by `or`
    severity: str
    summary: str  # Prometheus's template: {{ $labels.NAME }}, {{ $value }} (| humanize, | humanize1024)
    description: str = ""
    for_: str = ""  # how long the condition holds before Prometheus fires ("": at once)

    @property
    def expr(self) -> str:
        return " or ".join(c.promql() for c in self.conditions)


RULES = (
    Rule("RockmqGroupBehindInMessages", (Condition("rocketmq_consumer_lag_messages", ">", 10000),), "warning",
         "Group {{ $labels.consumer_group }} is {{ $value }} messages behind on {{ $labels.topic }}",
         "Ready + in flight: messages stored and not acknowledged by the group.", "5m"),
    Rule("RockmqGroupBehindInTime", (Condition("rocketmq_consumer_lag_latency", ">", 300000),), "warning",
         "Group {{ $labels.consumer_group }}'s oldest unacknowledged message of {{ $labels.topic }} is "
         "{{ $value | humanize }} ms old",
         "rocketmq_consumer_lag_latency is in ms since the store time of the oldest message the group has not "
         "acknowledged.", "5m"),
    Rule("RockmqDeadLettersGrowing", (Condition("rocketmq_send_to_dlq_messages_total", ">", 0, increase="10m"),),
         "warning", "Group {{ $labels.consumer_group }} sent {{ $value }} messages of {{ $labels.topic }} to its "
         "dead-letter queue in 10 minutes", "See them with `rockmq dlq list {{ $labels.consumer_group }}`."),
    Rule("RockmqReplicaLagging", (Condition("rockmq_replica_lag_seconds", ">", 30),), "critical",
         "Replica {{ $labels.replica }} is {{ $value }} s behind its primary",
         "With --replication sync, sends wait for a replica; a lagging one fails them after replication_timeout_s.",
         "2m"),
    Rule("RockmqDiskNearlyFull", (Condition("rockmq_disk_free_bytes", "<", 2, times="rockmq_disk_reserve_bytes"),),
         "warning", "{{ $value | humanize1024 }}B free: below twice the reserve, past which sends are refused",
         for_="5m"),
    Rule("RockmqSendsRefused", (Condition("rockmq_sends_refused_disk_full_total", ">", 0, increase="5m"),
                                Condition("rockmq_disk_full", "==", 1)), "critical",
         "Sends are refused: the disk is full (disk_reserve_mib)"),
    Rule("RockmqConnectionsRefused", (Condition("rockmq_connections_refusing", "==", 1),), "critical",
         "max_connections reached: new connections are closed as they are accepted", for_="1m"),
    Rule("RockmqStalledStreams", (Condition("rockmq_streams_cancelled_total", ">", 10, increase="10m"),), "info",
         "{{ $value }} streams cancelled in 10 minutes: their clients stopped reading"),
    Rule("RockmqShardDown", (Condition("rockmq_shard_up", "==", 0),), "critical",
         "Shard {{ $labels.broker }} of a --workers server does not answer", for_="1m"),
)
METRICS = frozenset(n for r in RULES for c in r.conditions for n in (c.metric, c.times) if n)
COUNTED = frozenset(c.metric for r in RULES for c in r.conditions if c.increase)  # what Baselines keeps


def seconds(window: str) -> float:
    """ "10m" -> 600.0 (PromQL's s, m and h)."""
    found = WINDOW.fullmatch(window)
    if not found:
        raise ValueError(f"not a window: {window!r}")
    return int(found.group(1)) * {"s": 1, "m": 60, "h": 3600}[found.group(2)]


LONGEST_S = max(seconds(c.increase) for r in RULES for c in r.conditions if c.increase)


def rules_yaml() -> str:
    """deploy/prometheus/rules.yml (strings JSON-quoted: a YAML double-quoted scalar)."""
    lines = [HEADER.rstrip("\n"), "groups:", "  - name: rockmq", "    rules:"]
    for r in RULES:
        lines += [f"      - alert: {r.alert}", f"        expr: {r.expr}"]
        lines += [f"        for: {r.for_}"] if r.for_ else []
        lines += [f"        labels: {{severity: {r.severity}}}", "        annotations:",
                  f"          summary: {json.dumps(r.summary)}"]
        lines += [f"          description: {json.dumps(r.description)}"] if r.description else []
    return "\n".join(lines) + "\n"


Key = tuple[tuple[str, str], ...]


def _key(labels: dict[str, str]) -> Key:
    return tuple(sorted(labels.items()))


class Baselines:
    """Snapshots of the counters increase() reads (COUNTED), one at most every SNAPSHOT_S, for LONGEST_S:
    bounded by that many snapshots of those few series."""

    def __init__(self) -> None:
        self.snapshots: deque[tuple[float, dict[str, dict[Key, float]]]] = deque(
            maxlen=int(LONGEST_S / SNAPSHOT_S) + 2)

    def add(self, at: float, series: dict[str, list[Sample]]) -> None:
        if self.snapshots and at - self.snapshots[-1][0] < SNAPSHOT_S:
            return
        self.snapshots.append((at, {n: {_key(labels): v for labels, v in series.get(n, ())} for n in COUNTED}))

    def increase(self, metric: str, labels: dict[str, str], value: float, window_s: float, now: float) -> float:
        """From the oldest snapshot within the window to `value` (none older than now: 0; a counter that went
        down, the broker restarted: from 0; a series the snapshot lacks was 0 then)."""
        base = next((s for at, s in self.snapshots if now - at <= window_s and at < now), None)
        if base is None:
            return 0.0
        old = base.get(metric, {}).get(_key(labels), 0.0)
        return value - old if value >= old else value


@dataclass(frozen=True)
class Firing:
    rule: Rule
    summary: str  # its summary with the labels and value of the series that holds


def firing(series: dict[str, list[Sample]], baselines: Baselines, now: float) -> list[Firing]:
    """Every rule's series whose condition holds now."""
    out = []
    for rule in RULES:
        for c in rule.conditions:
            others = {_key(labels): v for labels, v in series.get(c.times, ())} if c.times else {}
            for labels, v in series.get(c.metric, ()):
                value = baselines.increase(c.metric, labels, v, seconds(c.increase), now) if c.increase else v
                threshold = c.threshold * others[_key(labels)] if c.times and _key(labels) in others else c.threshold
                if (not c.times or _key(labels) in others) and OPS[c.op](value, threshold):
                    out.append(Firing(rule, summary(rule.summary, labels, value)))
    return out


def summary(template: str, labels: dict[str, str], value: float) -> str:
    """A rule's summary template worded for one series, as Prometheus would."""
    def fill(m: re.Match[str]) -> str:
        what, _, how = (p.strip() for p in m.group(1).partition("|"))
        if what.startswith("$labels."):
            return labels.get(what.removeprefix("$labels."), "")
        return _humanize1024(value) if how == "humanize1024" else f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"

    return re.sub(r"\{\{\s*(.*?)\s*\}\}", fill, template)


def _humanize1024(value: float) -> str:
    for unit, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        if value >= 1024 ** power:
            return f"{value / 1024 ** power:.4g}{unit}"
    return f"{value:.4g}"
