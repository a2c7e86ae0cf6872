"""The pure parts of the dashboard's Access pages, test messages and login throttle (rockmq/ui/access.py,
send.py, throttle.py): forms read into the calls the CLI makes, the form fields a topic's types need, the
status a broker's code shows as, and the throttle's buckets and bound."""

from __future__ import annotations

import pytest

from rockmq.protocol import acl, users
from rockmq.ui.access import Shown, acls_table, grant_entry, new_secret, users_table
from rockmq.ui.send import TRANSACTION_ONLY, Sent, http_status, outgoing, send_form, sent_line
from rockmq.ui.throttle import LoginThrottle, keys_of


def test_a_grant_form_is_the_clis_entry():
    entry = grant_entry({"user": " bob ", "resource": "Topic:T*", "actions": "Pub, Sub,", "source_ips": "10.0.0.0/8"})
    assert (entry.user, entry.resource, list(entry.actions), list(entry.source_ips), entry.decision) == (
        "bob", "Topic:T*", ["Pub", "Sub"], ["10.0.0.0/8"], "Allow")
    assert grant_entry({"user": "b", "resource": "*", "actions": "All", "deny": "yes"}).decision == "Deny"
    for missing in ({"resource": "*", "actions": "All"}, {"user": "b", "actions": "All"}, {"user": "b", "resource": "*"}):
        with pytest.raises(ValueError, match="at least one action"):
            grant_entry(missing)


def test_a_secret_is_the_one_typed_or_a_generated_one():
    assert new_secret("typed-secret") == ("typed-secret", False)
    one, generated = new_secret("")
    assert generated and len(one) >= 32 and one != new_secret("")[0]


def test_the_tables_escape_names_and_confirm_what_takes_access_away():
    html = users_table([users.UserInfo(name="<b>", enabled=True), users.UserInfo(name="eve", enabled=False)], "tok")
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert html.count('name="confirm"') == 1  # disabling asks; enabling does not
    html = acls_table([acl.AclEntry(user="bob", resource="*", actions=["All"], decision="Allow")], "tok")
    assert 'action="/ui/access/revoke"' in html and 'name="confirm"' in html and 'value="tok"' in html
    assert '<p class="empty">None.</p>' in acls_table([], "tok")


def test_users_and_entries_are_paged_together():
    listed = [users.UserInfo(name=f"u{i:03}") for i in reversed(range(120))]
    entries = [acl.AclEntry(user="u000", resource=f"Topic:t{i}") for i in range(30)]
    first = Shown.of(listed, entries, 1)
    assert (first.number, first.pages, first.counts) == (1, 3, "120 users, 30 ACL entries")
    assert [u.name for u in first.user_rows][:2] == ["u000", "u001"] and len(first.entry_rows) == 30
    last = Shown.of(listed, entries, 99)  # past the end: the last page
    assert (last.number, [u.name for u in last.user_rows][0], list(last.entry_rows)) == (3, "u100", [])
    assert Shown.of([], [], 0).pages == 1


def test_a_test_message_form_is_read_into_a_message():
    m = outgoing("T", {"body": "hi", "tag": " a ", "keys": "k1, k2", "delay": "30s"}, 1_000)
    assert (m.topic, m.body, m.tag, m.keys, m.deliver_at_ms, m.priority) == ("T", b"hi", "a", ("k1", "k2"), 31_000, None)
    assert outgoing("T", {"body": "x", "priority": "3"}, 0).priority == 3
    assert outgoing("T", {"body": "x", "message_group": "g"}, 0).message_group == "g"
    with pytest.raises(ValueError, match="give one of them"):
        outgoing("T", {"body": "x", "message_group": "g", "delay": "1s"}, 0)
    with pytest.raises(ValueError, match="whole number"):
        outgoing("T", {"body": "x", "priority": "high"}, 0)
    with pytest.raises(ValueError, match="invalid delay"):
        outgoing("T", {"body": "x", "delay": "soon"}, 0)
    with pytest.raises(ValueError, match="at most 64 KiB"):
        outgoing("T", {"body": "x" * (64 * 1024 + 1)}, 0)


def test_the_send_form_offers_what_the_topics_types_need():
    assert 'name="message_group"' not in send_form("T", ["NORMAL"], "tok")
    assert 'name="message_group"' in send_form("T", ["FIFO"], "tok")
    assert 'name="delay"' in send_form("T", ["DELAY"], "tok") and 'name="lite_topic"' in send_form("T", ["LITE"], "tok")
    assert 'name="priority"' in send_form("T", ["PRIORITY"], "tok")
    only = send_form("T", ["TRANSACTION"], "tok")
    assert 'id="send"' not in only and "transactional producer" in TRANSACTION_ONLY and 'id="send-why-not"' in only
    assert 'id="send"' in send_form("%RETRY%G", ["NORMAL", "TRANSACTION"], "tok")
    assert 'action="/ui/topics/%25RETRY%25G/send"' in send_form("%RETRY%G", ["NORMAL"], "tok")


def test_the_result_links_the_id_to_its_message_page():
    line = sent_line("a b", Sent("01ABC", "broker-a", 2, 1234))
    assert 'href="/ui/messages/01ABC?topic=a%20b"' in line and "queue 2, offset 1,234" in line
    assert "queue" not in sent_line("T", Sent("01ABC", "broker-a", -1, 7))  # a PRIORITY message: placed by the broker


@pytest.mark.parametrize(("code", "status"), [(40000, 400), (40300, 403), (40402, 404), (42900, 429),
                                              (50000, 502), (0, 502)])
def test_a_brokers_code_shows_as_an_http_status(code, status):
    assert http_status(code) == status


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_wrong_secrets_empty_a_bucket_that_refills():
    clock = Clock()
    t = LoginThrottle(burst=3, refill_s=10.0, clock=clock)
    keys = keys_of("127.0.0.1", "alice")
    for _ in range(3):
        assert t.wait_s(keys) == 0
        t.failed(keys)
    assert t.wait_s(keys) == pytest.approx(10.0)
    assert t.wait_s(keys_of("127.0.0.1", "bob")) == pytest.approx(10.0)  # the address is out of tries
    assert t.wait_s(keys_of("10.0.0.9", "alice")) == pytest.approx(10.0)  # ... and so is the key
    assert t.wait_s(keys_of("10.0.0.9", "bob")) == 0
    clock.now = 4.0
    assert t.wait_s(keys) == pytest.approx(6.0)
    clock.now = 10.0
    assert t.wait_s(keys) == 0  # one more try
    t.failed(keys)
    assert t.wait_s(keys) == pytest.approx(10.0)
    t.succeeded(keys)
    assert t.wait_s(keys) == 0


def test_the_throttles_table_is_bounded_and_forgets_full_buckets():
    clock = Clock()
    t = LoginThrottle(burst=2, refill_s=1.0, limit=4, clock=clock)
    for i in range(10):
        t.failed([f"key {i}"])
    assert len(t._left) == 4
    clock.now = 5.0
    assert all(t.wait_s([f"key {i}"]) == 0 for i in range(10)) and not t._left
