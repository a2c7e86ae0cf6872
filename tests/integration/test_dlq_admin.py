"""`rockmq dlq list|resend|purge` against a real broker: dead letters made the real way (received
and never acknowledged until the group's attempts ran out), sent back to their group only, purged."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime

import grpc
from broker_process import AUTH_ADMIN, AUTH_SECRET
from dead_letters import dead_letters, make_dead_letters
from test_cli import assert_one_line_error, ok, table

from rockmq.broker import dead_letters as dead_letters_module
from rockmq.protocol import admin, pb
from rockmq.store import keys
from rockmq.store.schema import Family


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def test_list_shows_each_dead_letter(broker, conn, unique):
    topic, group = unique("dlq-topic"), unique("dlq-group")
    conn.create_topic(topic)
    ids = make_dead_letters(conn, topic, group, ["a", "b"], keys=("order-7",))
    rows = {r[0]: r for r in table(ok(broker.cli("dlq", "list", group)), "ID")}
    assert set(rows) == set(ids)
    for mid in ids:
        assert rows[mid][1] == topic and rows[mid][2] == "2" and rows[mid][4] == "order-7"
    listed = json.loads(ok(broker.cli("dlq", "list", group, "--json")))
    assert {m["message_id"] for m in listed["messages"]} == set(ids)
    assert all(m["topic"] == topic and m["attempts"] == 2 and m["keys"] == ["order-7"] for m in listed["messages"])
    stored = min(m["store_ms"] for m in listed["messages"])
    assert json.loads(ok(broker.cli("dlq", "list", group, "--json", "--to", iso(stored))))["messages"] == []
    after = json.loads(ok(broker.cli("dlq", "list", group, "--json", "--from", iso(stored))))["messages"]
    assert {m["message_id"] for m in after} == set(ids)
    limited = broker.cli("dlq", "list", group, "--max", "1")
    assert len(table(ok(limited), "ID")) == 1 and "more matched" in limited.stderr


def test_resend_reaches_only_that_group(broker, conn, unique):
    topic, group, other = unique("dlq-topic"), unique("dlq-group"), unique("dlq-other")
    conn.create_topic(topic)
    conn.create_group(other)
    first, second = make_dead_letters(conn, topic, group, ["first", "second"])
    # The other group consumes the topic as usual: it gets both once, and never again after the resend.
    assert {m.system_properties.message_id for m in conn.receive_n(other, topic, 2)} == {first, second}
    conn.ack(other, topic, *conn.receive_n(other, topic, 0))

    out = ok(broker.cli("dlq", "resend", group, "--id", first))
    assert "sent back 1" in out
    back = conn.receive_n(group, topic, 2, within=3)
    assert [m.system_properties.message_id for m in back] == [first]
    assert back[0].body == b"first" and back[0].system_properties.delivery_attempt == 1  # its attempts start over
    conn.ack(group, topic, *back)
    code, again = conn.receive(other, topic, poll_s=0.5)
    assert again == [] and code == pb.MESSAGE_NOT_FOUND
    assert {d.message_id for d in dead_letters(conn, group)} == {first, second}  # the copies stay until purged


def test_resend_all_at_a_rate(broker, conn, unique):
    topic, group = unique("dlq-topic"), unique("dlq-group")
    conn.create_topic(topic)
    ids = make_dead_letters(conn, topic, group, ["1", "2", "3"])
    began = time.monotonic()
    assert "sent back 3" in ok(broker.cli("dlq", "resend", group, "--all", "--rate", "2"))
    assert time.monotonic() - began >= 1.0  # 2 in the first second, the third after it
    assert {m.system_properties.message_id for m in conn.receive_n(group, topic, 3)} == set(ids)


def test_purge_before_and_all(broker, conn, unique):
    topic, group = unique("dlq-topic"), unique("dlq-group")
    conn.create_topic(topic)
    old = make_dead_letters(conn, topic, group, ["old"])
    cut = iso(int(time.time() * 1000) + 5)
    time.sleep(0.05)
    new = make_dead_letters(conn, topic, group, ["new"])
    assert "purged 1 " in ok(broker.cli("dlq", "purge", group, "--before", cut))
    assert [d.message_id for d in dead_letters(conn, group)] == new
    assert old != new
    assert "purged 1 " in ok(broker.cli("dlq", "purge", group))
    assert dead_letters(conn, group) == []
    assert table(ok(broker.cli("dlq", "list", group)), "ID") == []


def test_bad_input_is_one_line(broker, conn, unique):
    topic, group = unique("dlq-topic"), unique("dlq-group")
    conn.create_topic(topic)
    make_dead_letters(conn, topic, group, ["x"])
    assert_one_line_error(broker.cli("dlq", "list", unique("no-such-group")), 1, "does not exist")
    assert_one_line_error(broker.cli("dlq", "resend", group, "--id", "NOPE"), 1, "no dead letter NOPE")
    assert_one_line_error(broker.cli("dlq", "purge", group, "--before", "2026-01-01T00:00:00"), 2, "zone")
    assert_one_line_error(broker.cli("dlq", "list", group, "--from", "yesterday"), 2, "invalid time")
    assert_one_line_error(broker.cli("dlq", "resend", group), 2, "--id")


def test_a_letter_whose_original_is_gone_is_reported(broker, conn, unique):
    topic, group = unique("dlq-gone"), unique("dlq-group")
    conn.create_topic(topic)
    (mid,) = make_dead_letters(conn, topic, group, ["lost"])
    ok(broker.cli("topic", "delete", topic))
    result = broker.cli("dlq", "resend", group, "--all")
    assert result.returncode == 1 and "sent back 0" in result.stdout
    assert result.stderr.strip() == f"not sent back: {mid}: topic {topic!r} no longer exists"


def test_a_group_that_pulls_is_refused(broker, conn, unique):
    topic, group = unique("dlq-pull"), unique("dlq-puller")
    conn.create_topic(topic)
    make_dead_letters(conn, topic, group, ["x"])
    ok(broker.cli("group", "update", group, "--consume-mode", "offset"))
    assert_one_line_error(broker.cli("dlq", "resend", group, "--all"), 1, "consumes by offsets")


def test_acl_get_lists_and_update_changes(auth_broker, unique):
    """Group · Get lists a group's dead letters; sending them back or purging them needs Group · Update."""
    admin = ("--access-key", AUTH_ADMIN, "--secret-key", AUTH_SECRET)
    user, group = unique("ops"), unique("dlq-acl")
    ok(auth_broker.cli("user", "create", user, "--secret", "ops-secret", *admin))
    ok(auth_broker.cli("group", "create", group, *admin))
    ok(auth_broker.cli("acl", "grant", user, "--resource", f"Group:{group}", "--actions", "Get", *admin))
    as_user = ("--access-key", user, "--secret-key", "ops-secret")
    ok(auth_broker.cli("dlq", "list", group, *as_user))
    assert_one_line_error(auth_broker.cli("dlq", "purge", group, *as_user), 1, "may not Update")
    ok(auth_broker.cli("acl", "grant", user, "--resource", f"Group:{group}", "--actions", "Get,Update", *admin))
    assert "purged 0 " in ok(auth_broker.cli("dlq", "purge", group, *as_user))


def test_a_high_rate_still_sends_back_in_bounded_chunks(harness, monkeypatch):
    """--rate is the client's number: a chunk in memory (and in one write) stays at most UNPACED_CHUNK letters."""
    monkeypatch.setattr(dead_letters_module, "UNPACED_CHUNK", 2)
    conn = harness.conn
    conn.create_topic("dlq-chunks")
    make_dead_letters(conn, "dlq-chunks", "dlq-chunker", [str(i) for i in range(5)])
    letters = harness.services.catalog.dead_letters
    chunks: list[int] = []
    send_back = letters._send_back

    def counted(group, chunk, reply):  # a spy: the real call, its chunk's size noted
        chunks.append(len(chunk))
        send_back(group, chunk, reply)

    monkeypatch.setattr(letters, "_send_back", counted)
    reply = conn.admin.ResendDeadLetters(admin.DlqResendRequest(group="dlq-chunker", all=True, rate=1_000_000),
                                         timeout=30)
    assert reply.resent == 5 and max(chunks) <= 2, (reply, chunks)


def test_a_group_deleted_during_a_paced_resend_keeps_no_retries(harness):
    """The resend stops at the deletion: nothing it queues afterwards outlives the group (its id is never used again)."""
    conn = harness.conn
    conn.create_topic("dlq-deleted")
    make_dead_letters(conn, "dlq-deleted", "dlq-goner", ["1", "2", "3", "4"])
    group, topic = harness.group("dlq-goner"), harness.topic("dlq-deleted")
    assert group is not None and topic is not None
    codes: list[grpc.StatusCode] = []

    def resend() -> None:
        try:
            conn.admin.ResendDeadLetters(admin.DlqResendRequest(group="dlq-goner", all=True, rate=1), timeout=30)
        except grpc.RpcError as e:
            codes.append(e.code())

    sending = threading.Thread(target=resend)
    sending.start()
    time.sleep(0.5)  # the first letter went back; the rest wait for their seconds
    conn.admin.DeleteGroup(admin.DeleteGroupRequest(name="dlq-goner", force=True), timeout=10)
    sending.join(30)
    retries = keys.retry_prefix(group.id, topic.id)
    assert harness.call(lambda: harness.services.ctx.store.first_key(Family.RETRY, retries, keys.prefix_end(retries))) is None
    assert codes == [grpc.StatusCode.NOT_FOUND]
