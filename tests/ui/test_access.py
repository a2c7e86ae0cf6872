"""The dashboard's Access pages and "send a test message" (issue 31, docs/dashboard.md) in a real headless Chromium
against a real broker: with --auth an admin reaches Access from the nav, creates a user whose generated secret is
shown once, and grants it a topic; the new user logs in with that secret and sees that topic's page but not the
topic list nor Access (the broker's refusals on 403 pages). A test message sent from a topic's page (--ui-admin)
shows its id, whose link opens the message's page. Each page is screenshot (Access at a phone's width too)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_setup import SECRETS, signed
from browser import Browser, Page
from mqwire import RPC_TIMEOUT
from test_dashboard import _check as check
from test_dashboard_changes import Served

from rockmq.auth.users import Users
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import admin, admin_grpc


def log_in(page: Page, served: Served, user: str, secret: str) -> None:
    assert page.goto(served.url("/ui/")) == 401
    page.fill("input[name='access_key']", user)
    page.fill("input[name='secret']", secret)
    assert page.click("form.login button") == served.url("/ui/")


@pytest.fixture(scope="module")
def with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("ui-access") / "data"
    Users(data).create("admin", SECRETS["admin"], super_user=True)
    s = Served(data, "--auth")
    yield s
    s.broker.stop()


def test_an_admin_creates_and_grants_a_user_who_then_sees_only_what_it_may(
        page: Page, browser: Browser, with_auth: Served, tmp_path: Path) -> None:
    topic = "ui-access-topic"
    with open_channel(with_auth.broker.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=topic), metadata=signed("admin"),
                                             timeout=RPC_TIMEOUT)
    log_in(page, with_auth, "admin", SECRETS["admin"])
    assert page.click("nav a:text-is('Access')") == with_auth.url("/ui/access")
    check(page, "401 (Unauthorized)")  # the login page's
    assert ["admin", "enabled", "super user"] in [r[:3] for r in page.rows("#users")]
    page.fill("#create-user input[name='name']", "carol")
    page.click("#create-user button")
    assert page.text(".done") == "Created user carol."
    secret = page.text("#secret")
    page.screenshot("access-created")
    page.goto(with_auth.url("/ui/access"))
    page.fill("#grant input[name='user']", "carol")
    page.fill("#grant input[name='resource']", f"Topic:{topic}")
    page.fill("#grant input[name='actions']", "Sub,Get")
    page.click("#grant button")
    assert page.text(".done") == f"Granted carol Sub,Get on Topic:{topic}."
    page.goto(with_auth.url("/ui/access"))
    assert ["carol", f"Topic:{topic}", "Get,Sub", "anywhere", "Allow"] in [r[:5] for r in page.rows("#acls")]
    page.screenshot("access")
    phone = browser.page(tmp_path / "phone", width=390, height=844)  # reads on a phone too
    log_in(phone, with_auth, "admin", SECRETS["admin"])
    assert phone.goto(with_auth.url("/ui/access")) == 200
    phone.screenshot("access-phone")

    carol = browser.page(tmp_path / "carol")  # a fresh context: no admin cookie
    log_in(carol, with_auth, "carol", secret)
    assert carol.goto(with_auth.url(f"/ui/topics/{topic}")) == 200
    assert carol.title() == f"rockmq · Topic {topic}" and len(carol.rows("#queues")) > 0
    assert carol.goto(with_auth.url("/ui/topics")) == 403 and "carol" in carol.text(".error")
    assert carol.goto(with_auth.url("/ui/access")) == 403 and "carol" in carol.text(".error")
    carol.screenshot("access-refused")


@pytest.fixture(scope="module")
def ui_admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = Served(tmp_path_factory.mktemp("ui-send"), "--ui-admin")
    yield s
    s.broker.stop()


def test_a_test_message_sent_from_a_topics_page_is_found_on_its_message_page(page: Page, ui_admin: Served) -> None:
    topic = "ui-send-topic"
    ui_admin.broker.cli("topic", "create", topic, check=True)
    assert page.goto(ui_admin.url(f"/ui/topics/{topic}")) == 200
    page.fill("#send textarea[name='body']", '{"order": 42}')
    page.fill("#send input[name='tag']", "test")
    page.fill("#send input[name='keys']", "order-42")
    page.screenshot("topic-send")
    page.click("#send button")
    assert page.title() == "rockmq · Message sent"
    sent = page.text("#sent")
    page.screenshot("topic-sent")
    assert page.click("#sent") == ui_admin.url(f"/ui/messages/{sent}?topic={topic}")
    assert page.title() == f"rockmq · Message {sent}"
    assert ["keys", "order-42"] in [[r[0].lower(), *r[1:]] for r in page.rows("#headers")]
    assert page.text("#body") == '{"order": 42}'
    check(page)
    page.screenshot("message-sent")
