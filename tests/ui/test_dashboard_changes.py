"""The dashboard's changes (issue 31 §3, docs/dashboard.md "Changes") in a real headless Chromium against a real
broker: resending a dead letter delivers it to the group again; resetting a group to earliest makes it re-read
(rockmq's client receives the messages a second time); with auth, a wrong secret is refused and a read-only user
cannot reset offsets (the broker's refusal on a 403 page); a change without the CSRF token is refused, whether its
form lost the token or another site's page forged it, and the group's position stays. Each page is screenshot.
More refusals over HTTP: tests/integration/test_ui_changes.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from acked import acked_bodies
from acl_setup import SECRETS, grant, signed
from broker_process import BrokerProcess
from browser import Page
from dead_letters import make_dead_letters
from mqwire import RPC_TIMEOUT, Conn
from test_dashboard import _check as check
from tls_certs import free_port

from rockmq.auth.users import Users
from rockmq.client import Credentials, Message, Producer
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import admin, admin_grpc

SENT = 4


class Served:
    """A broker with its HTTP port and `args`; `url(path)` is a page of its dashboard."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        self.http_port = free_port()
        self.broker = BrokerProcess(data_dir, "--http-port", str(self.http_port), *args).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("ui-admin"), "--ui-admin", "--max-attempts", "2")
    yield s
    s.broker.stop()


def send(endpoint: str, topic: str, credentials: Credentials | None = None) -> None:
    with Producer(endpoint, credentials=credentials) as p:
        for i in range(SENT):
            p.send(Message(topic, b"m%d" % i))


def test_resending_a_dead_letter_delivers_it_to_the_group_again(page: Page, served: Served, unique) -> None:
    topic, group = unique("ui-dlq-topic"), unique("ui-dlq-group")
    conn = Conn(served.broker.endpoint)
    try:
        conn.create_topic(topic)
        dead, _ = make_dead_letters(conn, topic, group, ["again", "not yet"])
        assert page.goto(served.url("/ui/dlq")) == 200
        check(page)
        page.screenshot("dlq")
        assert page.click(f"#dlq-groups a:text-is('{group}')") == served.url(f"/ui/dlq/{group}")
        assert {row[1] for row in page.rows("#dead")} >= {dead}
        page.screenshot("dlq-group")
        page.click(f"#dead input[value='{dead}']", navigates=False)
        page.click("button[value='selected']")
        assert page.text(".done") == f"Sent back 1 dead letters to group {group}."
        page.screenshot("dlq-resent")
        back = conn.receive_n(group, topic, 1, within=5)
        assert [(m.system_properties.message_id, m.body) for m in back] == [(dead, b"again")]
        conn.ack(group, topic, *back)
    finally:
        conn.close()


def consumed(served: Served, topic: str, group: str) -> set[bytes]:
    """A topic and a group made, SENT messages sent and the group's receipt of every one -> their bodies."""
    served.broker.cli("topic", "create", topic, check=True)
    served.broker.cli("group", "create", group, check=True)
    send(served.broker.endpoint, topic)
    first = acked_bodies(served.broker.endpoint, topic, group, SENT)
    assert len(first) == SENT
    return first


def test_resetting_a_group_to_earliest_makes_it_re_read(page: Page, served: Served, unique) -> None:
    topic, group = unique("ui-reset-topic"), unique("ui-reset-group")
    first = consumed(served, topic, group)
    assert page.goto(served.url(f"/ui/groups/{group}")) == 200
    check(page)
    page.screenshot("group-reset-form")
    page.click("#reset input[name='confirm']", navigates=False)  # earliest is the default choice
    page.click("#reset button")
    assert page.text(".done") == f"Reset group {group} on {topic} to earliest."
    page.screenshot("group-reset")
    assert acked_bodies(served.broker.endpoint, topic, group, SENT) == first


@contextmanager
def forger(target: str, topic: str) -> Iterator[str]:
    """Another site (127.0.0.1 on another port: another origin) whose page posts a reset to `target`, the
    dashboard's reset URL, as a forger would: every field but the CSRF token it cannot know."""
    page = (f"<!doctype html><title>forger</title><form method=post action='{target}'>"
            f"<input type=hidden name=topic value='{topic}'><input type=hidden name=to value=earliest>"
            "<input type=hidden name=confirm value=yes>"
            "<button type=submit>Win a prize</button></form>").encode()

    class Forged(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forged)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_change_without_the_csrf_token_is_refused(page: Page, served: Served, unique) -> None:
    topic, group = unique("ui-csrf-topic"), unique("ui-csrf-group")
    consumed(served, topic, group)
    assert page.goto(served.url(f"/ui/groups/{group}")) == 200  # the browser holds its cookie from here on
    assert page.remove("#reset input[name='csrf']") == 1
    page.click("#reset input[name='confirm']", navigates=False)
    page.click("#reset button")
    assert page.title() == "rockmq · Refused" and page.text(".error") == "The form is stale: reload the page."
    page.screenshot("reset-without-csrf")
    with forger(served.url(f"/ui/groups/{group}/reset"), topic) as site:
        assert page.goto(site) == 200
        page.click("button")
        assert page.text(".error") == "Change things from this dashboard's own pages."
        page.screenshot("reset-forged")
    assert acked_bodies(served.broker.endpoint, topic, group, SENT) == set()  # nothing was reset


def test_with_auth_a_wrong_secret_is_refused_and_a_read_only_user_cannot_reset(page: Page, tmp_path: Path) -> None:
    users = Users(tmp_path / "data")
    for name in ("admin", "bob"):
        users.create(name, SECRETS[name], super_user=name == "admin")
    s = Served(tmp_path / "data", "--auth")
    topic, group, root = "ui-auth-topic", "ui-auth-group", Credentials("admin", SECRETS["admin"])
    try:
        with open_channel(s.broker.endpoint) as ch:
            stub = admin_grpc.AdminStub(ch)
            stub.CreateTopic(admin.CreateTopicRequest(name=topic), metadata=signed("admin"), timeout=RPC_TIMEOUT)
            stub.CreateGroup(admin.CreateGroupRequest(name=group), metadata=signed("admin"), timeout=RPC_TIMEOUT)
            for resource in (f"Topic:{topic}", f"Group:{group}"):
                grant(ch, "bob", resource, "Sub,Get")  # bob reads: he sees the group, and may not move it
        send(s.broker.endpoint, topic, root)
        acked_bodies(s.broker.endpoint, topic, group, SENT, root)
        assert page.goto(s.url("/ui/")) == 401
        page.fill("input[name='access_key']", "bob")
        page.fill("input[name='secret']", "not-his-secret")
        page.click("form.login button")
        assert page.text(".error") == "Wrong access key or secret."
        page.screenshot("login-refused")
        page.fill("input[name='access_key']", "bob")
        page.fill("input[name='secret']", SECRETS["bob"])
        assert page.click("form.login button") == s.url("/ui/")
        assert page.goto(s.url(f"/ui/groups/{group}")) == 200
        page.click("#reset input[name='confirm']", navigates=False)
        page.click("#reset button")
        assert page.title() == "rockmq · Not allowed" and "bob" in page.text(".error")
        page.screenshot("reset-refused")
    finally:
        s.broker.stop()
