"""The dashboard (issue 31, docs/dashboard.md) over HTTP from real brokers with real traffic: the
overview lists the brokers and a rate that moves; the topics page lists a created topic whose queue
offsets are what was sent; a topic's and a group's lag; unknown names answer 404 with a message on the
page; with --auth a page needs a login (else 401 and the form), the broker's ACLs decide what a user
sees, and a change needs the session's CSRF token; a `--workers 2` server shows both shards. The browser tests
of the same pages are tests/ui/."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlencode

import pytest
from broker_process import BrokerProcess
from scrape import get
from tls_certs import free_port
from waiting import wait_for

from rockmq.auth.users import Users
from rockmq.client import Message, Producer, SimpleConsumer

TOPIC, GROUP, SENT = "ui-orders", "ui-billing", 30


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    http = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("ui"), "--http-port", str(http)).start()
    yield b, f"http://127.0.0.1:{http}"
    b.stop()


def rows(html: str, table: str) -> list[list[str]]:
    """The text of each body row's cells of <table id=`table`>."""
    body = re.search(rf'<table id="{table}">.*?<tbody>(.*?)</tbody>', html, re.S)
    assert body, f"no table {table}"
    return [[unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]


def test_overview_lists_the_broker_and_its_rate_moves(broker):
    b, base = broker
    page = get(f"{base}/ui/")
    assert page.status == 200 and "<title>rockmq · Overview</title>" in page.body and "<h1>Overview</h1>" in page.body
    assert [r[:4] for r in rows(page.body, "brokers")] == [["broker-a", "primary", "-", "up"]]
    assert re.search(r'id="rate-in">\d+\.\d msg/s<', page.body)
    assert all(f'href="{link}"' in page.body for link in ("/ui/", "/ui/topics", "/ui/groups"))
    with Producer(b.endpoint) as p:
        def moved() -> bool:
            p.send(Message("ui-traffic", b"x"))
            rate = json.loads(get(f"{base}/ui/api/overview").body)["rate_in"]
            return float(rate.removesuffix(" msg/s")) > 0

        b.cli("topic", "create", "ui-traffic", check=True)
        wait_for(moved, 10, interval=0.5, what="the messages-in rate to move")


def test_topic_pages_show_the_offsets_sent_and_the_group_lag(broker):
    b, base = broker
    b.cli("topic", "create", TOPIC, "--queues", "2", check=True)
    b.cli("group", "create", GROUP, check=True)
    with Producer(b.endpoint) as p:
        for i in range(SENT):
            p.send(Message(TOPIC, b"order %d" % i))
    with SimpleConsumer(b.endpoint, GROUP, {TOPIC: "*"}, await_s=1) as c:
        c.receive()  # the group takes a position on the topic, and messages in flight
    listed = get(f"{base}/ui/topics?filter=ui-ord")
    assert listed.status == 200 and "<title>rockmq · Topics</title>" in listed.body
    assert f'<a href="/ui/topics/{TOPIC}">{TOPIC}</a>' in listed.body
    assert rows(listed.body, "topics") == [[TOPIC, "2", f"{SENT} msg", rows(listed.body, "topics")[0][3]]]
    topic = get(f"{base}/ui/topics/{TOPIC}")
    assert topic.status == 200 and f"<title>rockmq · Topic {TOPIC}</title>" in topic.body
    queues = rows(topic.body, "queues")
    assert [q[:3] for q in queues] == [["broker-a", "0", "0"], ["broker-a", "1", "0"]]
    assert sum(int(q[3]) for q in queues) == SENT
    # The groups on a topic come from counters read every 2 s (docs/dashboard.md): the new one shows soon.
    wait_for(lambda: [g[0] for g in rows(get(f"{base}/ui/topics/{TOPIC}").body, "groups")] == [GROUP], 10,
             interval=0.5, what="the group on the topic's page")
    group = get(f"{base}/ui/groups/{GROUP}")
    assert group.status == 200 and [r[0] for r in rows(group.body, "lag")] == [TOPIC, TOPIC]
    assert sum(int(r[6].removesuffix(" msg").replace(",", "")) for r in rows(group.body, "lag")) > 0
    assert GROUP in [r[0] for r in rows(get(f"{base}/ui/groups").body, "groups")]


def test_unknown_names_answer_404_with_a_message(broker):
    _, base = broker
    for path, says in (("/ui/topics/no-such", "topic 'no-such' does not exist"),
                       ("/ui/groups/no-such", "consumer group 'no-such' does not exist")):
        page = get(base + path)
        assert page.status == 404 and f'<p class="error">{says}' in unescape(page.body) and "Traceback" not in page.body


def ask(port: int, method: str, path: str, form: dict[str, str] | None = None,
        cookie: str = "") -> tuple[int, dict[str, str], str]:
    """One request, redirects not followed: (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Cookie": cookie} if cookie else {}
    body = urlencode(form) if form is not None else None
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read().decode()
    finally:
        conn.close()


def test_with_auth_pages_need_a_login_and_a_change_its_csrf_token(tmp_path):
    data, port = tmp_path / "data", free_port()
    users = Users(data)
    users.create("admin", "ui-admin-secret-1", super_user=True)
    users.create("nobody", "nobody-secret-1")
    b = BrokerProcess(data, "--auth", "--http-port", str(port)).start()
    try:
        for path in ("/ui/", "/ui/topics", "/ui/groups/g", "/ui/api/overview"):
            status, _, body = ask(port, "GET", path)
            assert status == 401 and 'action="/ui/login"' in body and "<table" not in body
        status, _, body = ask(port, "POST", "/ui/login", {"access_key": "admin", "secret": "wrong"})
        assert status == 401 and "Wrong access key or secret." in body
        status, headers, _ = ask(port, "POST", "/ui/login", {"access_key": "admin", "secret": "ui-admin-secret-1"})
        cookie = headers["Set-Cookie"]
        assert status == 303 and headers["Location"] == "/ui/"
        assert {"HttpOnly", "SameSite=Strict", "Path=/ui/"} <= {p.strip() for p in cookie.split(";")}
        session = cookie.split(";")[0]
        status, _, body = ask(port, "GET", "/ui/", cookie=session)
        assert status == 200 and [r[0] for r in rows(body, "brokers")] == ["broker-a"]
        csrf = re.search(r'name="csrf" value="([^"]+)"', body).group(1)
        assert ask(port, "POST", "/ui/logout", {}, cookie=session)[0] == 403  # no CSRF token: refused
        assert ask(port, "POST", "/ui/logout", {"csrf": csrf}, cookie=session)[0] == 303
        assert ask(port, "GET", "/ui/", cookie=session)[0] == 401
        # A user the ACLs grant nothing logs in, and the broker refuses them the data, on the page.
        nobody = ask(port, "POST", "/ui/login", {"access_key": "nobody", "secret": "nobody-secret-1"})[1]["Set-Cookie"]
        status, _, body = ask(port, "GET", "/ui/topics", cookie=nobody.split(";")[0])
        assert status == 403 and '<p class="error">' in body and "<table" not in body
    finally:
        b.stop()


def test_a_workers_server_shows_both_shards(tmp_path):
    http = free_port()
    b = BrokerProcess(tmp_path / "data", "--workers", "2", "--http-port", str(http)).start()
    try:
        b.cli("topic", "create", TOPIC, "--queues", "4", check=True)
        base = f"http://127.0.0.1:{http}"
        assert [r[:3] for r in rows(get(f"{base}/ui/").body, "brokers")] == [["broker-a-0", "primary", "0 of broker-a"],
                                                                             ["broker-a-1", "primary", "1 of broker-a"]]
        queues = rows(get(f"{base}/ui/topics/{TOPIC}").body, "queues")
        assert sorted({q[0] for q in queues}) == ["broker-a-0", "broker-a-1"]
    finally:
        b.stop()


def test_the_overview_lists_a_primarys_replica_under_it(tmp_path):
    http = free_port()
    primary = BrokerProcess(tmp_path / "p", "--replication", "async", "--http-port", str(http)).start()
    replica = BrokerProcess(tmp_path / "r", "--replica-of", primary.endpoint).start()
    try:
        def listed() -> list[list[str]]:
            return [[r[1], r[6]] for r in rows(get(f"http://127.0.0.1:{http}/ui/").body, "brokers")]

        wait_for(lambda: listed() == [["primary", primary.endpoint], ["replica", replica.endpoint]], 15, 0.2,
                 what="the replica listed under its primary")
    finally:
        replica.kill()
        primary.stop()
