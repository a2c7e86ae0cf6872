"""The overview's live parts and a group's members over HTTP (issue 31 §2, docs/dashboard.md), from a real
broker with real traffic from rockmq's client: the served overview already holds the three charts, and the
messages-in chart's points rise while messages flow (/ui/api/overview carries them); a group that fell
behind heads the top lagging groups; no alert would fire on a healthy broker, and with a disk reserve above
half the free space the disk alert of deploy/prometheus/rules.yml would; a push consumer shows among its
group's members with its language and address; a `--workers 2` server's chart rises from its shards' counters
and its groups' members show. The browser test of the same: tests/ui/test_dashboard_live.py."""

from __future__ import annotations

import json
import re
import shutil

import test_ui_pages
from broker_process import BrokerProcess
from scrape import get
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import Message, Producer, PushConsumer, SimpleConsumer
from rockmq.units import MiB

TOPIC, LAGGING = "live-orders", "live-slow"
broker = test_ui_pages.broker  # the fixture (a broker of this module's own)
rows = test_ui_pages.rows


def highest(points: str) -> float:
    """The highest value a chart's polyline shows, as a share of its top (0: none; 1: the top)."""
    return max((1 - float(p.split(",")[1]) / 100 for p in points.split()), default=0.0)


def test_the_overview_serves_its_charts_and_the_in_chart_rises_with_traffic(broker):
    b, base = broker
    page = get(f"{base}/ui/").body
    for chart in ("chart-in", "chart-out", "chart-lag"):
        assert re.search(rf'<figure class="chart" id="{chart}">.*?<svg [^>]*>.*?<polyline points="[^"]*"/>', page)
    assert re.search(r'<span class="end">\d\d:\d\d UTC</span>', page)
    b.cli("topic", "create", TOPIC, check=True)
    with Producer(b.endpoint) as p:
        def risen() -> bool:
            for _ in range(20):
                p.send(Message(TOPIC, b"x"))
            o = json.loads(get(f"{base}/ui/api/overview").body)
            return highest(o["charts"]["chart-in"]["points"]) > 0 and o["charts"]["chart-in"]["top"].endswith(" msg/s")

        wait_for(risen, 20, interval=0.5, what="the messages-in chart to rise")
    o = json.loads(get(f"{base}/ui/api/overview").body)
    assert {"rate_in", "as_of", "charts"} <= set(o) and set(o["charts"]) == {"chart-in", "chart-out", "chart-lag"}


def test_a_group_behind_heads_the_top_lag_and_no_alert_would_fire(broker):
    b, base = broker
    b.cli("topic", "create", TOPIC, check=False)
    b.cli("group", "create", LAGGING, check=True)
    with SimpleConsumer(b.endpoint, LAGGING, {TOPIC: "*"}, await_s=1) as c:
        c.receive(1)  # a position on the topic; what it did not take is its lag
    with Producer(b.endpoint) as p:
        for _ in range(50):
            p.send(Message(TOPIC, b"y"))

    def top() -> list[str]:
        listed = rows(get(f"{base}/ui/").body, "top-lag")
        return listed[0] if listed else []

    wait_for(lambda: top()[:2] == [LAGGING, TOPIC], 15, interval=0.5, what="the lagging group in #top-lag")
    page = get(f"{base}/ui/").body
    assert f'<a href="/ui/groups/{LAGGING}">{LAGGING}</a>' in page and re.fullmatch(r"[\d,]+ msg", top()[2])
    assert top()[3].endswith(" s")
    assert 'id="no-alerts"' in page and "No alert would fire." in page


def test_a_disk_reserve_above_half_the_free_space_would_fire_the_disk_alert(tmp_path):
    data, http = tmp_path / "data", free_port()
    data.mkdir()
    reserve_mib = int(shutil.disk_usage(data).free * 0.6 / MiB)  # free < 2 x reserve, and still > reserve
    b = BrokerProcess(data, "--http-port", str(http), "--disk-reserve-mib", str(reserve_mib)).start()
    try:
        page = get(f"http://127.0.0.1:{http}/ui/").body
        fired = rows(page, "alerts")
        assert [r[:2] for r in fired] == [["RockmqDiskNearlyFull", "warning"]], fired
        assert re.fullmatch(r"[\d.]+[KMGT]iB free: below twice the reserve, past which sends are refused", fired[0][2])
        assert fired[0][3] == "5m"
    finally:
        b.stop()


def test_a_groups_page_lists_its_members(broker):
    b, base = broker
    b.cli("topic", "create", TOPIC, check=False)
    with PushConsumer(b.endpoint, "live-members", {TOPIC: "*"}, lambda m: True):
        wait_for(lambda: rows(get(f"{base}/ui/groups/live-members").body, "members"), 10, interval=0.5,
                 what="the push consumer among the members")
        (member,) = rows(get(f"{base}/ui/groups/live-members").body, "members")
    client, kind, language, _, address, broker_name, lane = member
    assert (kind, language, broker_name, lane) == ("push-consumer", "PYTHON", "broker-a", "-")
    assert client and re.fullmatch(r"127\.0\.0\.1:\d+", address)


def test_a_workers_servers_charts_come_from_its_shards_counters_while_someone_looks(tmp_path):
    http = free_port()
    b = BrokerProcess(tmp_path / "data", "--workers", "2", "--http-port", str(http)).start()
    base = f"http://127.0.0.1:{http}"
    try:
        b.cli("topic", "create", TOPIC, "--queues", "4", check=True)
        with Producer(b.endpoint) as p:
            def risen() -> bool:
                p.send_batch([Message(TOPIC, b"w") for _ in range(20)])
                return highest(json.loads(get(f"{base}/ui/api/overview").body)["charts"]["chart-in"]["points"]) > 0

            wait_for(risen, 30, interval=1, what="the messages-in chart of a --workers server to rise")
        with PushConsumer(b.endpoint, "live-workers", {TOPIC: "*"}, lambda m: True):
            found = wait_for(lambda: rows(get(f"{base}/ui/groups/live-workers").body, "members"), 15, interval=0.5,
                             what="the push consumer among the members, through a --workers server")
        assert {r[1] for r in found} == {"push-consumer"} and {r[5] for r in found} <= {"broker-a-0", "broker-a-1"}
    finally:
        b.stop()
