"""The dashboard's changes (issue 31 §3, docs/dashboard.md "Changes") over HTTP from real brokers: without
--auth and --ui-admin no form shows and a POST is 403; with --ui-admin a reset to earliest makes the group
read again (rockmq's client receives the messages a second time), dead letters resend to their group and
purge; a POST without the CSRF token is 403; with --auth a read-only user cannot reset (the broker's
refusal on a 403 page, and in the audit log) and an admin can."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from acked import acked_bodies
from acl_setup import SECRETS, grant, signed
from broker_process import BrokerProcess
from dead_letters import dead_letters, make_dead_letters
from mqwire import RPC_TIMEOUT, Conn
from test_ui_pages import ask, rows
from tls_certs import free_port

from rockmq.auth.users import Users
from rockmq.client import Credentials, Message, Producer
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import admin, admin_grpc

TOPIC, GROUP, SENT = "uia-orders", "uia-billing", 5
ADMIN = Credentials("admin", SECRETS["admin"])


def csrf_of(body: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', body)
    assert found, "no CSRF token on the page"
    return found.group(1)


def browser_cookie(headers: dict[str, str]) -> str:
    return headers["Set-Cookie"].split(";")[0]


def send_and_consume(b: BrokerProcess, topic: str, group: str) -> set[bytes]:
    """SENT messages sent to `topic`, then received and acknowledged by `group` -> their bodies."""
    b.cli("topic", "create", topic, check=True)
    b.cli("group", "create", group, check=True)
    with Producer(b.endpoint) as p:
        for i in range(SENT):
            p.send(Message(topic, b"m%d" % i))
    return acked_bodies(b.endpoint, topic, group, SENT)


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    port = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("uia"), "--http-port", str(port), "--ui-admin",
                      "--max-attempts", "2").start()
    yield b, port
    b.stop()


def test_without_ui_admin_no_form_shows_and_a_post_is_refused(tmp_path):
    port = free_port()
    b = BrokerProcess(tmp_path / "data", "--http-port", str(port)).start()
    try:
        send_and_consume(b, TOPIC, GROUP)
        status, _, body = ask(port, "GET", f"/ui/groups/{GROUP}")
        assert status == 200 and "<form method=\"post\"" not in body and 'name="csrf"' not in body
        status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", {"topic": TOPIC, "to": "earliest",
                                                                          "confirm": "yes"})
        assert status == 403 and "read-only: start the broker with --ui-admin" in body
        assert ask(port, "POST", f"/ui/dlq/{GROUP}/purge", {"confirm": "yes"})[0] == 403
    finally:
        b.stop()


def test_with_ui_admin_a_reset_to_earliest_makes_the_group_read_again(admin_broker):
    b, port = admin_broker
    first = send_and_consume(b, TOPIC, GROUP)
    assert len(first) == SENT
    status, headers, body = ask(port, "GET", f"/ui/groups/{GROUP}")
    assert status == 200 and 'id="reset"' in body and 'name="confirm"' in body
    cookie, csrf = browser_cookie(headers), csrf_of(body)
    form = {"csrf": csrf, "topic": TOPIC, "to": "earliest"}
    status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", form, cookie=cookie)
    assert status == 400 and "I understand" in body  # not confirmed: nothing changed
    assert acked_bodies(b.endpoint, TOPIC, GROUP, SENT) == set()
    assert ask(port, "POST", f"/ui/groups/{GROUP}/reset", form | {"confirm": "yes"})[0] == 403  # no cookie
    status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", form | {"confirm": "yes", "csrf": "x"},
                          cookie=cookie)
    assert status == 403 and "stale" in body
    status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", form | {"confirm": "yes"}, cookie=cookie)
    assert status == 200 and f"Reset group {GROUP} on {TOPIC} to earliest." in body
    assert acked_bodies(b.endpoint, TOPIC, GROUP, SENT) == first


def test_a_bad_time_is_a_readable_line(admin_broker):
    _, port = admin_broker
    status, headers, body = ask(port, "GET", f"/ui/groups/{GROUP}")
    cookie, csrf = browser_cookie(headers), csrf_of(body)
    status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", {
        "csrf": csrf, "topic": TOPIC, "to": "time", "time": "yesterday", "confirm": "yes"}, cookie=cookie)
    assert status == 400 and "invalid time" in body and "Traceback" not in body


def test_dead_letters_list_resend_and_purge(admin_broker):
    b, port = admin_broker
    topic, group = "uia-dlq-topic", "uia-dlq-group"
    conn = Conn(b.endpoint)
    try:
        conn.create_topic(topic)
        ids = make_dead_letters(conn, topic, group, ["d1", "d2"])
        status, headers, body = ask(port, "GET", "/ui/dlq")
        assert status == 200 and group in [r[0] for r in rows(body, "dlq-groups")]
        cookie = browser_cookie(headers)  # the browser's CSRF token follows it from page to page
        status, _, body = ask(port, "GET", f"/ui/dlq/{group}?from=2020-01-01T00:00:00Z", cookie=cookie)
        assert status == 200 and {r[1] for r in rows(body, "dead")} == set(ids)
        assert rows(ask(port, "GET", f"/ui/dlq/{group}?to=2020-01-01T00:00:00Z")[2], "dead") == []
        csrf = csrf_of(body)
        status, _, body = ask(port, "POST", f"/ui/dlq/{group}/resend",
                              {"csrf": csrf, "id": ids[0], "which": "selected", "rate": "10"}, cookie=cookie)
        assert status == 200 and f"Sent back 1 dead letters to group {group}." in body
        back = conn.receive_n(group, topic, 1, within=5)
        assert [m.system_properties.message_id for m in back] == [ids[0]]
        conn.ack(group, topic, *back)
        assert ask(port, "POST", f"/ui/dlq/{group}/purge", {"csrf": csrf}, cookie=cookie)[0] == 400  # not confirmed
        status, _, body = ask(port, "POST", f"/ui/dlq/{group}/purge", {"csrf": csrf, "confirm": "yes"}, cookie=cookie)
        assert status == 200 and f"Purged 2 dead letters of group {group}." in body
        assert dead_letters(conn, group) == []
    finally:
        conn.close()


def test_with_auth_a_read_only_user_cannot_reset_and_an_admin_can(tmp_path):
    data, port = tmp_path / "data", free_port()
    users = Users(data)
    for name in ("admin", "bob"):
        users.create(name, SECRETS[name], super_user=name == "admin")
    b = BrokerProcess(data, "--auth", "--http-port", str(port)).start()
    try:
        with open_channel(b.endpoint) as ch:
            stub = admin_grpc.AdminStub(ch)
            stub.CreateTopic(admin.CreateTopicRequest(name=TOPIC), metadata=signed("admin"), timeout=RPC_TIMEOUT)
            stub.CreateGroup(admin.CreateGroupRequest(name=GROUP), metadata=signed("admin"), timeout=RPC_TIMEOUT)
        with Producer(b.endpoint, credentials=ADMIN) as p:
            for i in range(SENT):
                p.send(Message(TOPIC, b"m%d" % i))
        first = acked_bodies(b.endpoint, TOPIC, GROUP, SENT, ADMIN)
        with open_channel(b.endpoint) as ch:
            grant(ch, "bob", f"Topic:{TOPIC}", "Sub")
            grant(ch, "bob", f"Group:{GROUP}", "Sub")

        def login(user: str) -> tuple[str, str]:
            status, headers, _ = ask(port, "POST", "/ui/login", {"access_key": user, "secret": SECRETS[user]})
            assert status == 303
            session = headers["Set-Cookie"].split(";")[0]
            return session, csrf_of(ask(port, "GET", "/ui/dlq", cookie=session)[2])

        form = {"topic": TOPIC, "to": "earliest", "confirm": "yes"}
        session, csrf = login("bob")
        status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", form | {"csrf": csrf}, cookie=session)
        assert status == 403 and '<p class="error">' in body and "bob" in body and "Traceback" not in body
        session, csrf = login("admin")
        assert ask(port, "POST", f"/ui/groups/{GROUP}/reset", form, cookie=session)[0] == 403  # no CSRF token
        status, _, body = ask(port, "POST", f"/ui/groups/{GROUP}/reset", form | {"csrf": csrf}, cookie=session)
        assert status == 200 and "Reset group" in body
        assert acked_bodies(b.endpoint, TOPIC, GROUP, SENT, ADMIN) == first
        # The refusal is audited as the CLI's would be: the same admin call, signed as bob.
        assert any("rockmq.audit" in line and 'authorization-refused who="bob"' in line and "Admin/ResetOffset" in line
                   for line in b.log)
    finally:
        b.stop()
