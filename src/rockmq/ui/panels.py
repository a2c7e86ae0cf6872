"""Page models of the overview's live tables (the top lagging groups, the alerts that would fire) and of a
group's members: counters and admin replies in, Tables (models.py) out. Pure."""

from __future__ import annotations

from rockmq.protocol import admin
from rockmq.ui.alerts import Firing
from rockmq.ui.counters import LAG, LAG_MS, Sample
from rockmq.ui.models import Cell, Table, format_count, format_seconds, href

TOP = 10  # lagging groups the overview shows


def top_lag(series: dict[str, list[Sample]]) -> Table:
    """The TOP (group, topic) lags of the counters, most messages behind first (then the oldest)."""
    latency = {(labels.get("consumer_group", ""), labels.get("topic", "")): v for labels, v in series.get(LAG_MS, ())}
    lags = [((labels.get("consumer_group", ""), labels.get("topic", "")), v) for labels, v in series.get(LAG, ())]
    lags = [(k, v) for k, v in lags if v > 0 or latency.get(k, 0) > 0]
    lags.sort(key=lambda kv: (-kv[1], -latency.get(kv[0], 0.0), kv[0]))
    rows = [[Cell(group, href("groups", group)), Cell(topic, href("topics", topic)), Cell(format_count(int(v))),
             Cell(format_seconds(int(latency.get((group, topic), 0))))] for (group, topic), v in lags[:TOP]]
    return Table(("Group", "Topic", "Lag", "Lag time"), rows)


def alerts(fired: list[Firing]) -> Table:
    rows = [[Cell(f.rule.alert), Cell(f.rule.severity), Cell(f.summary), Cell(f.rule.for_ or "at once")]
            for f in fired]
    return Table(("Alert", "Severity", "Summary", "Fires after"), rows)


def members(clients: list[admin.ClientInfo], lanes: dict[str, str]) -> Table:
    """A group's consumers (ListClients with its name), with the lane each heartbeats in (ListMembers)."""
    rows = [[Cell(c.client_id), Cell(c.kind), Cell(c.language or "-"), Cell(c.version or "-"), Cell(c.address or "-"),
             Cell(c.broker), Cell(lanes.get(c.client_id) or "-")] for c in sorted(clients, key=lambda c: c.client_id)]
    return Table(("Client", "Kind", "Language", "Version", "Address", "Broker", "Lane"), rows)
