"""The dashboard's Messages pages (issue 31) in a real headless Chromium, against a real broker: a message sent
with a key and consumed and acknowledged by a group through rockmq's client is found by searching its key
(`/ui/messages?topic=T&key=K`, and through the form, reached from the nav); its link leads to its page, whose
trace lists it delivered to the group and acknowledged by it, and whose body shows as JSON pretty; a time
without a zone is a 400 page with a readable error. Each page is screenshot (messages.png, message.png,
message-json.png, message-phone.png at a phone's width, messages-bad-time.png)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Browser, Page
from test_dashboard import Dashboard, _check
from waiting import wait_for

from rockmq.client import Message, Producer, SimpleConsumer


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    d = Dashboard(tmp_path_factory.mktemp("ui-messages"))
    yield d
    d.broker.stop()


def test_searching_a_key_finds_the_message_and_its_trace_shows_delivered_and_acknowledged(
        page: Page, browser: Browser, tmp_path: Path, dashboard: Dashboard, unique) -> None:
    topic, group, key = unique("ui-msg"), unique("ui-msg-group"), unique("order")
    with Producer(dashboard.broker.endpoint) as p:
        sent = p.send(Message(topic, b'{"order": 42, "paid": true}', tag="paid", keys=[key]))
    with SimpleConsumer(dashboard.broker.endpoint, group, {topic: "*"}, await_s=1) as c:
        got = wait_for(lambda: c.receive(4), what="the message for the group")
        for m in got:
            c.ack(m)

    assert page.goto(dashboard.url("/ui/")) == 200  # from the nav, through the form (a GET: a URL)
    assert page.click("nav a[href='/ui/messages']") == dashboard.url("/ui/messages")
    page.fill("input[name=topic]", topic)
    page.fill("input[name=key]", key)
    url = page.press("input[name=key]", "Enter", navigates=True)
    assert url == dashboard.url(f"/ui/messages?topic={topic}&id=&key={key}&from=&to=")

    assert page.goto(dashboard.url(f"/ui/messages?topic={topic}&key={key}")) == 200  # the bookmarkable URL
    assert page.title() == "rockmq · Messages"
    found = page.rows("#messages")
    assert [(row[0], row[1], row[4], row[5]) for row in found] == [(sent.message_id, topic, key, "paid")], found
    assert found[0][6].endswith(" UTC") and found[0][7] == "27 B"
    _check(page)
    page.screenshot("messages")

    assert page.click(f"#messages a:text-is('{sent.message_id}')") == dashboard.url(
        f"/ui/messages/{sent.message_id}?topic={topic}")
    assert page.title() == f"rockmq · Message {sent.message_id}"
    trace = page.texts("#trace li")
    assert any(f"delivered to group {group}" in e for e in trace), trace
    assert any(f"acknowledged by {group}" in e for e in trace), trace
    assert all(e.split(" UTC ")[0] and " UTC " in e for e in trace), trace  # each event's time with its zone
    _check(page)
    page.screenshot("message")
    page.click("a:text-is('json')")
    assert '"order": 42,' in page.text("#body")
    page.screenshot("message-json")

    phone = browser.page(tmp_path, width=390, height=844)  # reads on a phone too
    assert phone.goto(dashboard.url(f"/ui/messages/{sent.message_id}?topic={topic}")) == 200
    phone.wait("#trace li >> nth=2")
    phone.screenshot("message-phone")


def test_a_time_without_a_zone_is_a_readable_error(page: Page, dashboard: Dashboard) -> None:
    assert page.goto(dashboard.url("/ui/messages?topic=t&key=k&from=2026-11-29T10:00:00")) == 400
    assert "has no zone" in page.text(".error")
    _check(page, "400")  # Chromium logs the page's own 400 status as a console error
    page.screenshot("messages-bad-time")
