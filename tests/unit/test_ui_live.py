"""The overview's live parts without a broker (rockmq/ui/history.py, charts.py, alerts.py, panels.py): the
charts' ring and rates, their drawing and labels, the alert rules (one table: deploy/prometheus/rules.yml is
generated from it) and what would fire, the top lagging groups and a group's members."""

from __future__ import annotations

from pathlib import Path

import yaml

from rockmq.protocol import admin
from rockmq.ui import alerts, charts, panels
from rockmq.ui.counters import RateMeter, families, read
from rockmq.ui.history import POINTS, SPAN_S, STEP_S, History, Totals
from rockmq.ui.live import Live

RULES_FILE = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules.yml"
NOW_MS = 1_800_000_000_000  # 2027-01-15 08:00:00 UTC


def cells(table) -> list[list[str]]:
    return [[c.text for c in row] for row in table.rows]


def test_history_is_a_fixed_ring_of_fifteen_minutes_and_rates_between_points():
    h = History()
    for i in range(POINTS + 50):
        h.add(NOW_MS + i * 5000, i * STEP_S, Totals(messages_in=10.0 * i, messages_out=5.0 * i, lag=7.0))
    assert len(h.points) == POINTS and (POINTS - 1) * STEP_S == SPAN_S
    s = h.series()
    assert len(s.rate_in) == POINTS - 1 and {v for _, v in s.rate_in} == {2.0} and {v for _, v in s.rate_out} == {1.0}
    assert len(s.lag) == POINTS and s.lag[-1] == (NOW_MS + (POINTS + 49) * 5000, 7.0)
    h.add(NOW_MS + 10**9, 10**6, Totals(3.0, 0.0, None))  # the broker restarted: its counters count from zero
    assert h.series().rate_in[-1][1] == 3.0 / (10**6 - (POINTS + 49) * STEP_S)
    assert h.series().lag[-1][1] == 7.0  # a point without the lag read: no lag point


def test_a_chart_is_right_aligned_on_now_with_a_round_top_and_its_units_and_zone():
    c = charts.chart("chart-in", "Messages in", [(NOW_MS - 1_000_000, 99.0), (NOW_MS - 600_000, 0.0),
                                                 (NOW_MS - 300_000, 30.0), (NOW_MS, 15.0)], NOW_MS, charts.format_rate)
    assert c.points == "300,100.0 600,40.0 900,70.0"  # older than 15 minutes: left out
    assert (c.top, c.last, c.start, c.end) == ("50.0 msg/s", "15.0 msg/s", "07:45 UTC", "08:00 UTC")
    assert set(c.json()) == {"points", "last", "top", "start", "end"}
    html = charts.html(c)
    assert '<figure class="chart" id="chart-in">' in html and '<polyline points="300,100.0 600,40.0 900,70.0"/>' in html
    assert '<span class="end">08:00 UTC</span>' in html
    empty = charts.chart("chart-lag", "Lag", [], NOW_MS, str)
    assert (empty.points, empty.last, empty.top) == ("", "-", "1.0")
    assert [charts.nice_top(v) for v in (0, 1, 1.5, 7, 10, 11, 4000)] == [1, 1, 2, 10, 10, 20, 5000]


def test_the_rules_file_is_generated_from_the_one_table():
    assert RULES_FILE.read_text() == alerts.rules_yaml(), "run python scripts/gen_rules.py"
    loaded = yaml.safe_load(RULES_FILE.read_text())["groups"][0]["rules"]
    assert [(r["alert"], r["expr"], r.get("for", ""), r["labels"]["severity"], r["annotations"]["summary"])
            for r in loaded] == [(r.alert, r.expr, r.for_, r.severity, r.summary) for r in alerts.RULES]
    sends = next(r for r in alerts.RULES if r.alert == "RockmqSendsRefused")
    assert sends.expr == "increase(rockmq_sends_refused_disk_full_total[5m]) > 0 or rockmq_disk_full == 1"
    disk = next(r for r in alerts.RULES if r.alert == "RockmqDiskNearlyFull")
    assert disk.expr == "rockmq_disk_free_bytes < 2 * rockmq_disk_reserve_bytes"


def test_what_would_fire_thresholds_products_and_increases():
    lag = {"topic": "orders", "consumer_group": "billing", "is_retry": "false", "is_system": "false"}
    series = {"rocketmq_consumer_lag_messages": [(lag, 10001.0), ({**lag, "consumer_group": "ok"}, 10000.0)],
              "rockmq_disk_free_bytes": [({}, 3 * 1024**3)], "rockmq_disk_reserve_bytes": [({}, 2 * 1024**3)],
              "rockmq_disk_full": [({}, 0.0)],
              "rocketmq_send_to_dlq_messages_total": [(lag, 4.0)]}
    baselines = alerts.Baselines()
    baselines.add(0.0, series)
    fired = alerts.firing(series, baselines, now=0.0)  # no baseline older than now: no increase yet
    assert [(f.rule.alert, f.summary) for f in fired] == [
        ("RockmqGroupBehindInMessages", "Group billing is 10,001 messages behind on orders"),
        ("RockmqDiskNearlyFull", "3GiB free: below twice the reserve, past which sends are refused")]
    later = {**series, "rocketmq_send_to_dlq_messages_total": [(lag, 9.0)], "rockmq_disk_full": [({}, 1.0)]}
    baselines.add(60.0, later)
    fired = alerts.firing(later, baselines, now=60.0)
    assert [f.rule.alert for f in fired] == ["RockmqGroupBehindInMessages", "RockmqDeadLettersGrowing",
                                             "RockmqDiskNearlyFull", "RockmqSendsRefused"]
    assert fired[1].summary == "Group billing sent 5 messages of orders to its dead-letter queue in 10 minutes"
    assert alerts.firing(later, baselines, now=60.0 + 11 * 60) == [f for f in alerts.firing(later, baselines, 60.0)
                                                                  if f.rule.alert != "RockmqDeadLettersGrowing"]
    assert alerts.firing({}, alerts.Baselines(), 0.0) == []


def test_baselines_are_bounded():
    baselines = alerts.Baselines()
    for i in range(1000):
        baselines.add(i * 1.0, {"rockmq_streams_cancelled_total": [({}, float(i))]})
    assert len(baselines.snapshots) <= alerts.LONGEST_S / alerts.SNAPSHOT_S + 2


def test_top_lag_most_behind_first_ten_at_most_linked():
    def labels(g: str, t: str = "t") -> dict[str, str]:
        return {"topic": t, "consumer_group": g}

    series = {"rocketmq_consumer_lag_messages": [(labels(f"g{i:02}"), float(i)) for i in range(15)]
              + [(labels("%RETRY%x", "%RETRY%x"), 14.0)],
              "rocketmq_consumer_lag_latency": [(labels("g14"), 2500.0), (labels("%RETRY%x", "%RETRY%x"), 9000.0)]}
    table = panels.top_lag(series)
    assert cells(table)[:3] == [["%RETRY%x", "%RETRY%x", "14 msg", "9.0 s"], ["g14", "t", "14 msg", "2.5 s"],
                                ["g13", "t", "13 msg", "0.0 s"]]
    assert len(table.rows) == panels.TOP and table.rows[0][0].href == "/ui/groups/%25RETRY%25x"
    assert panels.top_lag({}).rows == []


def test_members_join_the_clients_and_their_lanes():
    clients = [admin.ClientInfo(client_id="c2", kind="push-consumer", language="JAVA", version="5.0.7",
                                address="10.0.0.2:5000", broker="b"),
               admin.ClientInfo(client_id="c1", kind="simple-consumer", broker="b")]
    assert cells(panels.members(clients, {"c2": "canary"})) == [
        ["c1", "simple-consumer", "-", "-", "-", "b", "-"],
        ["c2", "push-consumer", "JAVA", "5.0.7", "10.0.0.2:5000", "b", "canary"]]


SCRAPE = """# TYPE rocketmq_messages_out counter
rocketmq_messages_out_total{topic="orders",consumer_group="g",is_retry="false",is_system="false"} 12.0
rocketmq_messages_out_total{topic="%RETRY%g",consumer_group="g",is_retry="true",is_system="true"} 3.0
# TYPE rocketmq_consumer_lag_messages gauge
rocketmq_consumer_lag_messages{topic="orders",consumer_group="g",is_retry="false",is_system="false"} 40.0
rocketmq_consumer_lag_messages{topic="%RETRY%g",consumer_group="g",is_retry="true",is_system="true"} 2.0
"""


def test_a_reading_sums_out_and_lag_and_keeps_what_it_is_asked_and_only_the_newest_keeps_it():
    r = read(families(SCRAPE.encode()), 1.0, frozenset({"rocketmq_consumer_lag_messages"}))
    assert (r.messages_out, r.lag) == (12.0, 42.0)
    assert [v for _, v in r.series["rocketmq_consumer_lag_messages"]] == [40.0, 2.0] and len(r.series) == 1
    meter = RateMeter()
    meter.add(r)
    meter.add(read(families(SCRAPE.encode()), 2.0, frozenset({"rocketmq_consumer_lag_messages"})))
    assert meter.readings[0].series == {} and meter.readings[1].series


def test_without_a_brokers_totals_readings_are_points_a_step_apart_at_least():
    live = Live()  # a --workers server: its points are the readings taken while someone looks (every 2 s)
    for at in (0.0, 2.0, 4.0, 6.0, 10.0, 12.0):
        live.read(read(families(SCRAPE.encode()), at))
    assert [p.at for p in live.history.points] == [0.0, 6.0, 12.0]
    assert {p.totals for p in live.history.points} == {Totals(0.0, 12.0, 42.0)}
