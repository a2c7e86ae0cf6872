"""The dashboard's Messages pages (issue 31, docs/dashboard.md) over HTTP from a real broker with real
traffic: a key search within a time range, a store-time search and an id search find the message sent
(linked to its page); its page shows headers, properties, the body as text, JSON pretty and hex, and a
trace of stored, delivered and acknowledged by the group that consumed it; bad input (a time without a
zone, no topic, an illegal topic name) is a 400 page with a readable error, an unknown topic or message a 404,
never a traceback; with --auth the pages need a login and ask as that user; a `--workers 2` server finds the
messages of both shards."""

from __future__ import annotations

import time
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlencode

import pytest
from broker_process import BrokerProcess
from scrape import get
from test_ui_pages import ask, rows
from tls_certs import free_port

from rockmq.auth.users import Users
from rockmq.client import Message, Producer, SimpleConsumer
from rockmq.plumbing.credentials import Credentials
from rockmq.ui.messages import message_href

TOPIC, GROUP, KEY = "ui-msg-orders", "ui-msg-billing", "order-42"
BODY = b'{"order": 42, "items": ["a", "b"]}'


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, int]]:
    """A broker with its HTTP port, one message with KEY sent and acknowledged by GROUP: (base URL, its
    id, when it was sent in ms)."""
    http = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("ui-msg"), "--http-port", str(http)).start()
    b.cli("topic", "create", TOPIC, check=True)
    began = int(time.time() * 1000) - 1000
    with Producer(b.endpoint) as p:
        p.send(Message(TOPIC, b"another", keys=["other"]))
        receipt = p.send(Message(TOPIC, BODY, tag="paid", keys=[KEY], properties={"region": "eu"}))
    with SimpleConsumer(b.endpoint, GROUP, {TOPIC: "*"}, await_s=2) as c:
        got: list = []
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            got += c.receive(8)
        for m in got:
            c.ack(m)
    yield f"http://127.0.0.1:{http}", receipt.message_id, began
    b.stop()


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + "Z"


def test_a_key_search_in_a_time_range_finds_the_message(sent):
    base, message_id, began = sent
    page = get(f"{base}/ui/messages?" + urlencode({"topic": TOPIC, "key": KEY, "from": _iso(began),
                                                   "to": _iso(began + 600_000)}))
    assert page.status == 200 and "<title>rockmq · Messages</title>" in page.body
    found = rows(page.body, "messages")
    assert [r[:2] for r in found] == [[message_id, TOPIC]] and found[0][4:6] == [KEY, "paid"]
    assert found[0][6].endswith(" UTC") and found[0][7] == f"{len(BODY)} B"
    assert f'href="{unescape(message_href(TOPIC, message_id))}"' in unescape(page.body)
    empty = get(f"{base}/ui/messages?" + urlencode({"topic": TOPIC, "key": KEY, "to": _iso(began - 60_000)}))
    assert empty.status == 200 and rows(empty.body, "messages") == []


def test_store_time_and_id_searches(sent):
    base, message_id, began = sent
    by_time = rows(get(f"{base}/ui/messages?" + urlencode({"topic": TOPIC, "from": _iso(began)})).body, "messages")
    assert [r[4] for r in by_time] == ["other", KEY]  # oldest first
    by_id = rows(get(f"{base}/ui/messages?" + urlencode({"topic": TOPIC, "id": message_id})).body, "messages")
    assert [r[0] for r in by_id] == [message_id]
    assert "<table" not in get(f"{base}/ui/messages").body  # the form alone


def test_a_message_page_shows_headers_body_views_and_its_trace(sent):
    base, message_id, _ = sent
    page = get(base + message_href(TOPIC, message_id))
    assert page.status == 200 and f"<title>rockmq · Message {message_id}</title>" in page.body
    headers = dict(rows(page.body, "headers"))
    assert headers["Keys"] == KEY and headers["Tag"] == "paid" and headers["Type"] == "NORMAL"
    assert rows(page.body, "properties") == [["region", "eu"]]
    assert unescape(page.body).count(BODY.decode()) == 1
    pretty = unescape(get(base + message_href(TOPIC, message_id) + "&view=json").body)
    assert '"items": [\n    "a",' in pretty
    assert BODY[:8].hex(" ") in get(base + message_href(TOPIC, message_id) + "&view=hex").body
    trace = unescape(page.body.split('<ol id="trace">')[1].split("</ol>")[0])
    assert "stored on broker-a:" in trace and f"delivered to group {GROUP}" in trace
    assert f"acknowledged by {GROUP}" in trace and trace.count(" UTC</time>") >= 3


@pytest.mark.parametrize(("query", "status", "says"), [
    ({"topic": TOPIC, "key": KEY, "from": "2026-11-29T10:00:00"}, 400, "has no zone"),
    ({"key": KEY}, 400, "Give a topic."),
    ({"topic": TOPIC, "from": "yesterday"}, 400, "invalid time 'yesterday'"),
    ({"topic": "no-such-topic", "key": KEY}, 404, "no-such-topic"),
    ({"topic": "a b", "key": KEY}, 400, "illegal topic name 'a b'"),  # the broker's INVALID_ARGUMENT
    ({"topic": TOPIC, "id": "0000000000000000000000000000"}, 404, ""),
])
def test_bad_input_is_a_readable_error(sent, query, status, says):
    base, _, _ = sent
    page = get(f"{base}/ui/messages?" + urlencode(query))
    assert page.status == status and '<p class="error">' in page.body and "Traceback" not in page.body
    assert says in unescape(page.body)
    assert '<form method="get" action="/ui/messages"' in page.body  # to search again


def test_with_auth_the_pages_need_a_login_and_are_signed_as_the_user(tmp_path):
    data, port = tmp_path / "data", free_port()
    Users(data).create("admin", "ui-admin-secret-1", super_user=True)
    b = BrokerProcess(data, "--auth", "--http-port", str(port)).start()
    try:
        b.cli("topic", "create", TOPIC, "--access-key", "admin", "--secret-key", "ui-admin-secret-1", check=True)
        with Producer(b.endpoint, credentials=Credentials("admin", "ui-admin-secret-1")) as p:
            message_id = p.send(Message(TOPIC, BODY, keys=[KEY])).message_id
        query = "/ui/messages?" + urlencode({"topic": TOPIC, "key": KEY})
        for path in (query, message_href(TOPIC, message_id)):
            status, _, body = ask(port, "GET", path)
            assert status == 401 and 'action="/ui/login"' in body and message_id not in body
        session = ask(port, "POST", "/ui/login", {"access_key": "admin", "secret": "ui-admin-secret-1"})[1]
        cookie = session["Set-Cookie"].split(";")[0]
        status, _, body = ask(port, "GET", query, cookie=cookie)
        assert status == 200 and [r[0] for r in rows(body, "messages")] == [message_id]
        status, _, body = ask(port, "GET", message_href(TOPIC, message_id), cookie=cookie)
        assert status == 200 and "stored on broker-a:" in body
    finally:
        b.stop()


def test_a_workers_server_finds_messages_on_every_shard(tmp_path):
    http = free_port()
    b = BrokerProcess(tmp_path / "data", "--workers", "2", "--http-port", str(http)).start()
    try:
        b.cli("topic", "create", TOPIC, "--queues", "4", check=True)
        with Producer(b.endpoint) as p:
            sent = [p.send(Message(TOPIC, b"m%d" % i, keys=[KEY])) for i in range(8)]
        assert len({r.broker for r in sent}) == 2  # both shards hold some
        page = get(f"http://127.0.0.1:{http}/ui/messages?" + urlencode({"topic": TOPIC, "key": KEY}))
        assert sorted(r[0] for r in rows(page.body, "messages")) == sorted(r.message_id for r in sent)
        assert {r[2].split(":")[0] for r in rows(page.body, "messages")} == {"broker-a-0", "broker-a-1"}
    finally:
        b.stop()
