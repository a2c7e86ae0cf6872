"""The overview's live parts and a group's members (issue 31 §2) in a real headless Chromium, against a real
broker with real traffic from rockmq's client: the messages-in chart, already drawn in the served page, rises
while messages flow (the page's own script redraws it from /ui/api/overview); a group left behind heads the
top lagging groups, the lag chart reaches its lag, and it links to its page; a push consumer shows in its
group's members; the overview reads on a 390 px wide phone. Screenshots: overview-live.png, overview-lag.png,
overview-phone.png, group-members.png."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser import Browser, Page
from sending import Sending
from test_dashboard import BROKER_NAME, Dashboard, _check, _open
from waiting import wait_for

from rockmq.client import Message, Producer, PushConsumer, SimpleConsumer


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    d = Dashboard(tmp_path_factory.mktemp("ui-live"))
    yield d
    d.broker.stop()


def _highest(points: str | None) -> float:
    """The highest value a chart's polyline shows, as a share of its top."""
    return max((1 - float(p.split(",")[1]) / 100 for p in (points or "").split()), default=0.0)


def test_the_in_chart_rises_with_traffic(page: Page, dashboard: Dashboard, unique) -> None:
    _open(page, dashboard.url("/ui/"), "Overview")
    assert page.count("figure.chart svg polyline") == 3  # served drawn: no script needed to see them
    assert page.text("#chart-in .end").endswith(" UTC") and page.text("#chart-in .top").endswith(" msg/s")
    before = page.attr("#chart-in polyline", "points")
    sending = Sending(dashboard.broker.endpoint, unique("ui-chart"))
    try:
        wait_for(lambda: _highest(page.attr("#chart-in polyline", "points")) > 0
                 and page.attr("#chart-in polyline", "points") != before, timeout=20, interval=0.5,
                 what="the messages-in chart to rise while messages flow")
    finally:
        sending.stop()
    assert sending.acked, "no message was sent"
    assert float(page.text("#chart-in .last").removesuffix(" msg/s").replace(",", "")) >= 0
    page.screenshot("overview-live")
    _check(page)


def test_a_group_behind_heads_the_top_lag_and_its_members_show(page: Page, browser: Browser, dashboard: Dashboard,
                                                               unique, tmp_path) -> None:
    topic, group = unique("ui-behind"), unique("ui-slow")
    dashboard.broker.cli("topic", "create", topic, check=True)
    with Producer(dashboard.broker.endpoint) as p:
        p.send(Message(topic, b"first"))
        with SimpleConsumer(dashboard.broker.endpoint, group, {topic: "*"}, await_s=1) as c:
            wait_for(lambda: c.receive(1), what="a message for the group")  # its position on the topic
        p.send_batch([Message(topic, f"m{i}".encode()) for i in range(500)])

    def on_top() -> bool:
        page.goto(dashboard.url("/ui/"))
        rows = page.rows("#top-lag")
        return bool(rows) and rows[0][:2] == [group, topic]

    wait_for(on_top, timeout=15, interval=1, what="the group behind at the top of #top-lag")
    assert page.rows("#top-lag")[0][2] == "501 msg"  # the one in flight, not acknowledged, and the 500 after
    assert page.text("#no-alerts") == "No alert would fire."
    wait_for(lambda: page.text("#chart-lag .last") == "501 msg", timeout=15, interval=0.5,
             what="the lag chart (redrawn by the page's script) to reach the group's lag")
    page.screenshot("overview-lag")  # the whole overview: brokers, charts, top lag, alerts

    with PushConsumer(dashboard.broker.endpoint, group, {topic: "*"}, lambda m: True):
        assert page.click(f"#top-lag a:text-is('{group}')") == dashboard.url(f"/ui/groups/{group}")

        def member() -> list[list[str]]:
            page.goto(dashboard.url(f"/ui/groups/{group}"))
            return page.rows("#members")

        (row,) = wait_for(member, timeout=10, interval=0.5, what="the push consumer among the group's members")
        assert row[1:4] == ["push-consumer", "PYTHON", "rockmq"] and row[4].startswith("127.0.0.1:")
        page.screenshot("group-members")
        _check(page)

    phone = browser.page(tmp_path, width=390, height=844)  # reads on a phone too (a fresh page: `page` is gone)
    assert phone.goto(dashboard.url("/ui/")) == 200
    assert BROKER_NAME in [row[0] for row in phone.rows("#brokers")] and phone.count("figure.chart svg") == 3
    phone.screenshot("overview-phone")
