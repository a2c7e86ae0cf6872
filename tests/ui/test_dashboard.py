"""The dashboard (issue 31) in a real headless Chromium, against a real broker serving it under /ui/ on its HTTP
port, with real traffic from rockmq's client: the overview lists the broker and its messages-in rate moves while
messages flow (the page's own JavaScript refreshes it); the topics list links a created topic to its page, whose
per-queue max offsets are the messages sent; groups link to their lag; an unknown topic is a 404 page with an
error message. Every page has the nav links, loads nothing from off 127.0.0.1 and throws no JavaScript error;
each is screenshot (in the test's tmp dir, and in $ROCKMQ_UI_SHOTS when set)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from browser import Page
from sending import Sending
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import Message, Producer, SimpleConsumer

BROKER_NAME = "ui-broker"
NAV = ["/ui/", "/ui/topics", "/ui/groups"]


class Dashboard:
    """A broker with its HTTP port; `url(path)` is a page of its dashboard."""

    def __init__(self, data_dir: Path) -> None:
        self.http_port = free_port()
        self.broker = BrokerProcess(data_dir, "--http-port", str(self.http_port), "--broker-name", BROKER_NAME).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    d = Dashboard(tmp_path_factory.mktemp("ui-broker"))
    yield d
    d.broker.stop()


def _open(page: Page, url: str, title: str) -> None:
    """Open a dashboard page, check its title and what every page has (`_check`)."""
    assert page.goto(url) == 200
    assert page.title() == f"rockmq · {title}"
    _check(page)


def _check(page: Page, *allowed_errors: str) -> None:
    """What every page has: the nav links, nothing loaded from off 127.0.0.1, no JavaScript error (but those
    containing one of `allowed_errors`)."""
    assert set(NAV) <= set(page.attrs("a", "href")), page.attrs("a", "href")
    assert page.offsite() == []
    assert [e for e in page.errors() if not any(a in e for a in allowed_errors)] == []


def _rate(text: str) -> float:
    """'1,234.5 msg/s' -> 1234.5"""
    found = re.fullmatch(r"([\d,.]+)\s*msg/s", text)
    assert found, f"#rate-in reads {text!r}, not 'N msg/s'"
    return float(found.group(1).replace(",", ""))


def _int(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_the_overview_lists_the_broker_and_its_rate_moves_with_traffic(page: Page, dashboard: Dashboard, unique) -> None:
    _open(page, dashboard.url("/ui/"), "Overview")
    assert page.text("h1") == "Overview"
    assert BROKER_NAME in [row[0] for row in page.rows("#brokers")]
    before = page.text("#rate-in")
    _rate(before)

    def moved() -> str:
        now = page.text("#rate-in")
        return now if now != before and _rate(now) > 0 else ""

    sending = Sending(dashboard.broker.endpoint, unique("ui-rate"))
    try:
        wait_for(moved, timeout=12, interval=0.5, what="#rate-in to move above 0 while messages flow")
    finally:
        sending.stop()
    assert sending.acked, "no message was sent"
    page.screenshot("overview")
    _check(page)  # also after the script's refreshes


def test_a_topic_is_listed_and_links_to_its_queues_offsets(page: Page, dashboard: Dashboard, unique) -> None:
    topic = unique("ui-topic")
    dashboard.broker.cli("topic", "create", topic, "--queues", "2", check=True)
    with Producer(dashboard.broker.endpoint) as p:
        receipts = [p.send(Message(topic, f"m{i}".encode(), keys=[f"k{i}"])) for i in range(12)]
    sent = Counter(r.queue_id for r in receipts)  # messages per queue: its max offset, from min offset 0

    _open(page, dashboard.url(f"/ui/topics?filter={topic}"), "Topics")
    assert [row[0] for row in page.rows("#topics")] == [topic]
    assert page.attr(f"#topics a:text-is('{topic}')", "href") == f"/ui/topics/{topic}"
    page.screenshot("topics")
    _open(page, dashboard.url("/ui/topics?filter=no-topic-is-named-so&page=1"), "Topics")
    assert topic not in [row[0] for row in page.rows("#topics")]

    _open(page, dashboard.url("/ui/"), "Overview")  # plain links from /ui/ to the topic's page
    assert page.click("nav a[href='/ui/topics'], a[href='/ui/topics'] >> nth=0") == dashboard.url("/ui/topics")
    assert page.click(f"#topics a:text-is('{topic}')") == dashboard.url(f"/ui/topics/{topic}")
    _check(page)
    queues = page.rows("#queues")
    assert {(row[0], _int(row[1])) for row in queues} == {(BROKER_NAME, q) for q in range(2)}, queues
    assert {_int(row[1]): (_int(row[2]), _int(row[3])) for row in queues} == {q: (0, sent[q]) for q in range(2)}
    page.wait("#groups", state="attached")
    page.screenshot("topic")


def test_groups_link_to_their_lag(page: Page, dashboard: Dashboard, unique) -> None:
    topic, group = unique("ui-lag"), unique("ui-group")
    with Producer(dashboard.broker.endpoint) as p:
        p.send_batch([Message(topic, f"m{i}".encode()) for i in range(6)])
    with SimpleConsumer(dashboard.broker.endpoint, group, {topic: "*"}, await_s=1) as c:
        got = wait_for(lambda: c.receive(2), what="a message for the group")
        for m in got:
            c.ack(m)

    _open(page, dashboard.url("/ui/groups"), "Groups")
    assert page.attr(f"#groups a:text-is('{group}')", "href") == f"/ui/groups/{group}"
    page.screenshot("groups")
    assert page.click(f"#groups a:text-is('{group}')") == dashboard.url(f"/ui/groups/{group}")
    lag = page.rows("#lag")
    assert lag and all(topic in row for row in lag), lag  # a row per queue of the topic it consumed
    page.screenshot("group")


def test_an_unknown_topic_is_a_404_page_with_an_error(page: Page, dashboard: Dashboard) -> None:
    assert page.goto(dashboard.url("/ui/topics/no-such-topic")) == 404
    assert "no-such-topic" in page.text(".error")
    _check(page, "404")  # Chromium logs the page's own 404 status as a console error
    page.screenshot("unknown-topic")
