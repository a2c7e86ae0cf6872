"""The dashboard's Access pages, its "send a test message" and its login throttle (issue 31, docs/dashboard.md
"Access", "Send a test message") over HTTP from real brokers: with --auth an admin lists users and ACL entries,
creates a user (a generated secret shown once, never in the broker's log), disables and enables it, grants and
revokes, each in the audit log as the CLI's; a non-super user gets the broker's refusal on a 403 page; a change
without the CSRF token or the confirmation is refused; without --auth the page says access control is off. A
test message sent from a topic's page is found on its message page; a FIFO topic without a message group and a
user without Pub get the broker's line; a TRANSACTION topic says why not. Wrong secrets are throttled (429)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from test_ui_changes import browser_cookie, csrf_of
from test_ui_pages import ask, rows
from tls_certs import free_port

from rockmq.auth.users import Users
from rockmq.ui.throttle import MAX_FAILURES

SECRETS = {"admin": "access-admin-secret", "bob": "access-bob-secret"}


def start(data: Path, *args: str) -> tuple[BrokerProcess, int]:
    port = free_port()
    if "--auth" in args:
        users = Users(data)
        for name, secret in SECRETS.items():
            users.create(name, secret, super_user=name == "admin")
    return BrokerProcess(data, "--http-port", str(port), *args).start(), port


def login(port: int, user: str, secret: str = "") -> tuple[str, str]:
    """-> the session cookie and the session's CSRF token (read from a page's form)."""
    status, headers, body = ask(port, "POST", "/ui/login", {"access_key": user, "secret": secret or SECRETS[user]})
    assert status == 303, body
    session = headers["Set-Cookie"].split(";")[0]
    return session, csrf_of(ask(port, "GET", "/ui/", cookie=session)[2])


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    b, port = start(tmp_path_factory.mktemp("uiacc") / "data", "--auth")
    yield b, port
    b.stop()


def test_an_admin_creates_disables_grants_and_revokes(auth_broker):
    b, port = auth_broker
    session, csrf = login(port, "admin")
    status, _, body = ask(port, "GET", "/ui/access", cookie=session)
    assert status == 200 and 'href="/ui/access"' in body
    assert ["admin", "enabled", "super user"] in [r[:3] for r in rows(body, "users")]
    assert ["bob", "enabled", "user"] in [r[:3] for r in rows(body, "users")]
    status, headers, body = ask(port, "POST", "/ui/access/create", {"csrf": csrf, "name": "carol"}, cookie=session)
    assert status == 200 and "Created user carol." in body and headers["Cache-Control"] == "no-store"
    found = re.search(r'<code id="secret">([^<]+)</code>', body)
    assert found, body
    secret = unescape(found.group(1))
    carol, _ = login(port, "carol", secret)
    assert ask(port, "GET", "/ui/topics", cookie=carol)[0] == 403  # no grant yet: the broker refuses the list
    status, _, body = ask(port, "POST", "/ui/access/update", {"csrf": csrf, "name": "carol", "enabled": "no"},
                          cookie=session)
    assert status == 400 and "sure" in body  # a disable needs its confirmation
    status, _, body = ask(port, "POST", "/ui/access/update",
                          {"csrf": csrf, "name": "carol", "enabled": "no", "confirm": "yes"}, cookie=session)
    assert status == 200 and "User carol is disabled." in body
    assert ["carol", "disabled", "user"] in [r[:3] for r in rows(ask(port, "GET", "/ui/access", cookie=session)[2],
                                                                    "users")]
    assert ask(port, "POST", "/ui/login", {"access_key": "carol", "secret": secret})[0] == 401
    status, _, body = ask(port, "POST", "/ui/access/update", {"csrf": csrf, "name": "carol", "enabled": "yes"},
                          cookie=session)
    assert status == 200 and "User carol is enabled." in body
    grant = {"csrf": csrf, "user": "carol", "resource": "Topic:uiacc-*", "actions": "Sub, Get"}
    status, _, body = ask(port, "POST", "/ui/access/grant", grant, cookie=session)
    assert status == 200 and "Granted carol Sub,Get on Topic:uiacc-*." in body
    listed = rows(ask(port, "GET", "/ui/access", cookie=session)[2], "acls")
    assert ["carol", "Topic:uiacc-*", "Get,Sub", "anywhere", "Allow"] in [r[:5] for r in listed]
    revoke = {"csrf": csrf, "user": "carol", "resource": "Topic:uiacc-*"}
    assert ask(port, "POST", "/ui/access/revoke", revoke, cookie=session)[0] == 400  # not confirmed
    status, _, body = ask(port, "POST", "/ui/access/revoke", revoke | {"confirm": "yes"}, cookie=session)
    assert status == 200 and "Revoked carol's entry on Topic:uiacc-* (Allow Get,Sub)." in unescape(body)
    assert "carol" not in [r[0] for r in rows(ask(port, "GET", "/ui/access", cookie=session)[2], "acls")]
    log = "\n".join(b.log)
    assert secret not in log  # the generated secret is on the result page only
    for what in ("create user carol", "acl-grant"):
        assert any("rockmq.audit" in line and what in line and "admin" in line for line in b.log), what


def test_a_non_super_user_gets_the_brokers_refusal(auth_broker):
    _, port = auth_broker
    session, csrf = login(port, "bob")
    status, _, body = ask(port, "GET", "/ui/access", cookie=session)
    assert status == 403 and 'class="error"' in body and "bob" in body and "Traceback" not in body
    status, _, body = ask(port, "POST", "/ui/access/create", {"csrf": csrf, "name": "eve", "secret": "eve-secret-1"},
                          cookie=session)
    assert status == 403 and "bob" in body
    status, _, body = ask(port, "POST", "/ui/access/grant",
                          {"csrf": csrf, "user": "bob", "resource": "*", "actions": "All"}, cookie=session)
    assert status == 403


def test_an_access_change_needs_the_csrf_token(auth_broker):
    _, port = auth_broker
    session, _ = login(port, "admin")
    status, _, body = ask(port, "POST", "/ui/access/create", {"name": "mallory"}, cookie=session)
    assert status == 403 and "stale" in body
    status, _, body = ask(port, "POST", "/ui/access/grant", {"user": "bob", "resource": "*", "actions": "All"})
    assert status == 401  # no login at all
    assert "mallory" not in [r[0] for r in rows(ask(port, "GET", "/ui/access", cookie=session)[2], "users")]


def test_a_grant_without_actions_is_a_readable_line(auth_broker):
    _, port = auth_broker
    session, csrf = login(port, "admin")
    status, _, body = ask(port, "POST", "/ui/access/grant", {"csrf": csrf, "user": "bob", "resource": "*",
                                                             "actions": " , "}, cookie=session)
    assert status == 400 and "at least one action" in body


def test_without_auth_access_control_is_off_and_test_messages_are_sent(tmp_path):
    b, port = start(tmp_path / "data", "--ui-admin")
    try:
        status, headers, body = ask(port, "GET", "/ui/access")
        assert status == 404 and "Access control is off" in body and 'href="/ui/access"' not in body
        b.cli("topic", "create", "uiacc-plain", check=True)
        b.cli("topic", "create", "uiacc-fifo", "--types", "FIFO", check=True)
        b.cli("topic", "create", "uiacc-tx", "--types", "TRANSACTION", check=True)
        status, headers, body = ask(port, "GET", "/ui/topics/uiacc-plain")
        assert status == 200 and 'id="send"' in body
        cookie, csrf = browser_cookie(headers), csrf_of(body)
        status, _, body = ask(port, "POST", "/ui/access/create", {"csrf": csrf, "name": "x"}, cookie=cookie)
        assert status == 404 and "Access control is off" in body
        status, _, body = ask(port, "POST", "/ui/topics/uiacc-plain/send",
                              {"csrf": csrf, "body": '{"hello": 1}', "tag": "t1", "keys": "k1, k2"}, cookie=cookie)
        assert status == 200, body
        link = re.search(r'<a id="sent" href="([^"]+)">([^<]+)</a>', body)
        assert link and unescape(link.group(1)) == f"/ui/messages/{link.group(2)}?topic=uiacc-plain"
        status, _, page = ask(port, "GET", unescape(link.group(1)))
        assert status == 200 and "{&quot;hello&quot;: 1}" in page and "k1" in page
        status, _, body = ask(port, "POST", "/ui/topics/uiacc-fifo/send", {"csrf": csrf, "body": "x"}, cookie=cookie)
        assert status == 400 and "FIFO" in body and "Traceback" not in body  # the broker's line
        status, _, body = ask(port, "POST", "/ui/topics/uiacc-fifo/send",
                              {"csrf": csrf, "body": "x", "message_group": "g1"}, cookie=cookie)
        assert status == 200 and 'id="sent"' in body
        assert 'id="send-why-not"' in ask(port, "GET", "/ui/topics/uiacc-tx")[2]
        for types, fields in (("DELAY", {"delay": "1h"}), ("LITE", {"lite_topic": "uiacc-lite-one"}),
                              ("PRIORITY", {"priority": "1"})):
            topic = f"uiacc-{types.lower()}"
            b.cli("topic", "create", topic, "--types", types, check=True)
            page = ask(port, "GET", f"/ui/topics/{topic}")[2]
            assert all(f'name="{name}"' in page for name in fields), types
            status, _, body = ask(port, "POST", f"/ui/topics/{topic}/send", {"csrf": csrf, "body": "x"} | fields,
                                  cookie=cookie)
            assert status == 200 and 'id="sent"' in body, (types, body)
        assert ask(port, "POST", "/ui/topics/uiacc-plain/send", {"body": "x"}, cookie=cookie)[0] == 403  # no csrf
    finally:
        b.stop()


def test_without_ui_admin_no_send_form_and_a_send_is_refused(tmp_path):
    b, port = start(tmp_path / "data")
    try:
        b.cli("topic", "create", "uiacc-ro", check=True)
        assert 'id="send"' not in ask(port, "GET", "/ui/topics/uiacc-ro")[2]
        status, _, body = ask(port, "POST", "/ui/topics/uiacc-ro/send", {"body": "x"})
        assert status == 403 and "read-only" in body
    finally:
        b.stop()


def test_a_user_without_pub_gets_the_brokers_refusal(auth_broker):
    b, port = auth_broker
    session, csrf = login(port, "admin")
    b.cli("topic", "create", "uiacc-pub", "--access-key", "admin", "--secret-key", SECRETS["admin"], check=True)
    bob, bob_csrf = login(port, "bob")
    status, _, body = ask(port, "POST", "/ui/topics/uiacc-pub/send", {"csrf": bob_csrf, "body": "x"}, cookie=bob)
    assert status == 403 and "bob" in body
    status, _, body = ask(port, "POST", "/ui/topics/uiacc-pub/send", {"csrf": csrf, "body": "x"}, cookie=session)
    assert status == 200 and 'id="sent"' in body


def test_wrong_secrets_are_throttled(tmp_path):
    b, port = start(tmp_path / "data", "--auth")
    try:
        for _ in range(MAX_FAILURES):
            assert ask(port, "POST", "/ui/login", {"access_key": "admin", "secret": "guess"})[0] == 401
        status, headers, body = ask(port, "POST", "/ui/login", {"access_key": "admin", "secret": SECRETS["admin"]})
        assert status == 429 and "Too many wrong secrets: try again in" in body and int(headers["Retry-After"]) > 0
        # The address is throttled too: guessing at another key from it is refused the same way.
        assert ask(port, "POST", "/ui/login", {"access_key": "bob", "secret": "guess"})[0] == 429
    finally:
        b.stop()


def test_a_workers_server_sends_test_messages_and_lists_users(tmp_path):
    port = free_port()  # each shard has its own data: the first super user is given on the command line
    b = BrokerProcess(tmp_path / "data", "--workers", "2", "--auth", "--http-port", str(port), "--admin-user", "admin",
                      "--admin-secret", SECRETS["admin"]).start()
    try:
        session, csrf = login(port, "admin")
        assert ["admin", "enabled", "super user"] in [r[:3] for r in rows(ask(port, "GET", "/ui/access", cookie=session)[2],
                                                                  "users")]
        b.cli("topic", "create", "uiacc-shards", "--queues", "4", "--access-key", "admin", "--secret-key",
              SECRETS["admin"], check=True)
        brokers = set()
        for i in range(6):  # a queue at random each time: both shards' queues are reached
            status, _, body = ask(port, "POST", "/ui/topics/uiacc-shards/send", {"csrf": csrf, "body": f"m{i}"},
                                  cookie=session)
            assert status == 200, body
            where, link = re.search(r"\(broker ([^,]+),", body), re.search(r'<a id="sent" href="([^"]+)"', body)
            assert where and link, body
            brokers.add(where.group(1))
            assert ask(port, "GET", unescape(link.group(1)), cookie=session)[0] == 200
        assert brokers <= {"broker-a-0", "broker-a-1"} and brokers
    finally:
        b.stop()
