"""The per-group match index: a registered filtered group reads its matches from the index,
entries written before its registration are still scanned and evaluated, a changed filter
applies to everything not yet consumed, and registrations survive restarts."""

from __future__ import annotations

from mqwire import Conn, message

from rockmq.protocol import pb


def _send(conn: Conn, topic: str, prefix: str, n: int) -> None:
    conn.send_ok(*(message(topic, f"{prefix}-{i}", tag="t" if i % 2 else "u",
                           properties={"region": "eu" if i % 3 == 0 else "us", "n": str(i)}) for i in range(n)))


def _expected(prefix: str, n: int, pred) -> list[str]:
    return sorted(f"{prefix}-{i}" for i in range(n) if pred(i))


def _drain(conn: Conn, group: str, topic: str, **kw) -> list[str]:
    got = []
    while True:
        code, msgs = conn.receive(group, topic, batch=7, poll_s=0, **kw)
        if not msgs:
            assert code == pb.MESSAGE_NOT_FOUND, pb.Code.Name(code)
            return sorted(got)
        conn.ack(group, topic, *msgs)
        got += [m.body.decode() for m in msgs]


def test_matches_before_and_after_registration_arrive_once(conn, unique):
    topic, group = unique("idx"), unique("idx-g")
    conn.create_topic(topic, queues=3)
    sql = "region = 'eu' AND n > 2"
    _send(conn, topic, "pre", 30)
    code, first = conn.receive(group, topic, batch=1, poll_s=0, sql=sql)  # registers the group
    assert code == pb.OK and len(first) == 1
    conn.ack(group, topic, *first)
    _send(conn, topic, "post", 60)
    got = sorted([first[0].body.decode(), *_drain(conn, group, topic, sql=sql)])
    want = sorted(_expected("pre", 30, lambda i: i % 3 == 0 and i > 2) + _expected("post", 60, lambda i: i % 3 == 0 and i > 2))
    assert got == want


def test_tag_subscription_is_indexed_too(conn, unique):
    topic, group = unique("idx-tag"), unique("idx-tag-g")
    conn.create_topic(topic, queues=2)
    assert conn.receive(group, topic, poll_s=0, tag="t")[0] == pb.MESSAGE_NOT_FOUND
    _send(conn, topic, "m", 40)
    assert _drain(conn, group, topic, tag="t") == _expected("m", 40, lambda i: i % 2 == 1)


def test_changed_filter_applies_to_everything_not_yet_consumed(conn, unique):
    topic, group = unique("idx-change"), unique("idx-change-g")
    conn.create_topic(topic, queues=2)
    conn.receive(group, topic, poll_s=0, sql="region = 'eu'")
    _send(conn, topic, "a", 30)
    assert _drain(conn, group, topic, sql="region = 'us'") == _expected("a", 30, lambda i: i % 3 != 0)
    _send(conn, topic, "b", 30)
    assert _drain(conn, group, topic, sql="region = 'us'") == _expected("b", 30, lambda i: i % 3 != 0)
    _send(conn, topic, "c", 12)
    assert _drain(conn, group, topic) == _expected("c", 12, lambda i: True), "a match-all group missed messages"


def test_registration_survives_restart(fresh_broker, unique):
    topic, group = unique("idx-restart"), unique("idx-restart-g")
    conn = Conn(fresh_broker.endpoint)
    try:
        conn.create_topic(topic, queues=2)
        conn.receive(group, topic, poll_s=0, sql="region = 'eu'")
        _send(conn, topic, "x", 30)
    finally:
        conn.close()
    fresh_broker.kill()
    fresh_broker.restart()
    conn = Conn(fresh_broker.endpoint)
    try:
        _send(conn, topic, "y", 30)
        got = _drain(conn, group, topic, sql="region = 'eu'")
        assert got == sorted(_expected("x", 30, lambda i: i % 3 == 0) + _expected("y", 30, lambda i: i % 3 == 0))
    finally:
        conn.close()
