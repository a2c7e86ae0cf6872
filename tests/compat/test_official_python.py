"""Compatibility with the official RocketMQ 5 Python client (rocketmq-python-client 5.1.2, `import rocketmq`).

The unmodified client talks to a real `rockmq serve` subprocess (the session `broker` fixture,
started with `--max-attempts 3`). Invisible durations are whole seconds (the client puts them in
Duration.seconds) and every wait is bounded; every client is shut down by a context manager.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest
from official_client import (
    AWAIT_S,
    DELAY,
    FIFO,
    INVALID_RECEIPT_HANDLE,
    NORMAL,
    ConsumeResult,
    RecordingListener,
    producer,
    push_consumer,
    receive_for,
    receive_until,
    send,
    simple_consumer,
    wait_for,
)
from rocketmq.v5.exception import BadRequestException


def _by_id(messages):
    return {m.message_id: m for m in messages}


def _create_group(broker, name: str, *args: str) -> None:
    r = broker.cli("group", "create", name, *args)
    assert r.returncode == 0, f"rockmq group create {name} {args} failed:\n{r.stdout}\n{r.stderr}"


def _broker_log(broker) -> str:
    return "\n".join(list(broker.log)[-60:])


# --- 1. normal messages ------------------------------------------------------------------------

def test_normal_messages_round_trip_exactly(broker, unique):
    topic, group = unique("py-normal"), unique("py-normal-g")
    specs = [
        dict(body=b"plain body", tag="TagA", keys=["k-0"], properties={"p": "0"}),
        dict(body="unicode \u00e9\u4e2d".encode(), tag="TagB", keys=["k-1a", "k-1b"],
             properties={"color": "red", "size": "L"}),
        dict(body=bytes(range(256)) * 4, tag="TagA", keys=[], properties={}),
        dict(body=b"x" * 70_000, tag="big", keys=["k-3"], properties={"a": "1", "b": "2", "c": "3"}),
        dict(body=b"no tag at all", keys=["k-4"], properties={"only": "props"}),
    ]
    before_ms = int(time.time()) * 1000
    with producer(broker.endpoint, topic) as p:
        sent = [send(p, topic, s["body"], tag=s.get("tag"), keys=s["keys"], properties=s["properties"])
                for s in specs]
    assert len({m.message_id for m in sent}) == len(sent)

    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        got = receive_until(c, lambda g: len(g) >= len(sent), timeout=10)
        by_id = _by_id(got)
        assert len(got) == len(sent) and set(by_id) == {m.message_id for m in sent}, (
            f"sent {[m.message_id for m in sent]}, received {[m.message_id for m in got]}")
        for s in sent:
            r = by_id[s.message_id]
            assert r.topic == topic
            assert r.body == s.body
            assert r.tag == s.tag
            assert r.keys == s.keys
            assert r.properties == s.properties
            assert r.delivery_attempt == 1
            assert r.message_type == NORMAL
            assert r.message_group is None
            assert not r.corrupted, "body digest does not match the body"
            assert r.receipt_handle
            assert before_ms <= r.born_timestamp <= time.time() * 1000 + 1000
        for r in got:
            c.ack(r)
        # all acknowledged: nothing more for this group
        assert receive_for(c, 1.5, invisible_s=1) == []


# --- 2. FIFO -----------------------------------------------------------------------------------

def test_fifo_group_order_and_in_flight_blocking(broker, unique):
    topic, group = unique("py-fifo"), unique("py-fifo-g")
    _create_group(broker, group, "--fifo")
    groups = ["order-A", "order-B", "order-C"]
    sent: dict[str, list[str]] = defaultdict(list)
    with producer(broker.endpoint, topic) as p:
        for i in range(5):
            for g in groups:
                m = send(p, topic, f"{g}:{i}".encode(), tag="fifo", message_group=g)
                sent[g].append(m.message_id)

    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        # Take a single message and hold it (not acked, 2 s invisible).
        first = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=2, batch=1)
        assert len(first) == 1, "nothing received from the FIFO topic"
        held = first[0]
        g0 = held.message_group
        assert g0 in groups, f"FIFO message came back without its message_group: {g0!r}"
        assert held.message_type == FIFO
        assert held.message_id == sent[g0][0], "the first delivery of a message group is not its first message"
        assert held.delivery_attempt == 1

        # While it is in flight, nothing else of its message group may be delivered.
        others = c.receive(32, 30)
        leaked = [m.body for m in others if m.message_group == g0]
        assert not leaked, f"{g0}: later messages {leaked} delivered while {held.body!r} is in flight"
        consumed: dict[str, list[str]] = defaultdict(list)
        for m in others:
            consumed[m.message_group].append(m.message_id)
            c.ack(m)

        # The held message is not acked: after its 2 s it comes back (attempt 2) before anything later of g0.
        redelivered = None
        deadline = time.monotonic() + 10
        while redelivered is None and time.monotonic() < deadline:
            for m in c.receive(32, 30):
                if m.message_group == g0 and redelivered is None:
                    assert m.message_id == held.message_id, (
                        f"{g0}: {m.body!r} delivered before the unacknowledged {held.body!r} was redelivered")
                    assert m.delivery_attempt == 2
                    redelivered = m
                else:
                    assert m.message_group != g0, f"{g0}: {m.body!r} delivered while {held.body!r} is in flight"
                consumed[m.message_group].append(m.message_id)
                c.ack(m)
        assert redelivered is not None, (
            f"{held.body!r} was not redelivered after its invisible time\n{_broker_log(broker)}")

        # Drain the rest, acking each batch; every group must come out in send order.
        total = sum(len(v) for v in sent.values())
        deadline = time.monotonic() + 15
        while sum(len(v) for v in consumed.values()) < total and time.monotonic() < deadline:
            for m in c.receive(32, 30):
                consumed[m.message_group].append(m.message_id)
                c.ack(m)
        for g in groups:
            assert consumed[g] == sent[g], f"message group {g}: received {consumed[g]}, sent {sent[g]}"
        assert receive_for(c, 1.0, invisible_s=1) == []


def test_fifo_next_message_waits_for_ack(broker, unique):
    """Within one message group, message n+1 is only delivered once message n is acknowledged."""
    topic, group = unique("py-fifo2"), unique("py-fifo2-g")
    _create_group(broker, group, "--fifo")
    with producer(broker.endpoint, topic) as p:
        ids = [send(p, topic, f"m{i}".encode(), message_group="single").message_id for i in range(3)]

    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        for i, expected in enumerate(ids):
            got = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30, batch=1)
            assert [m.message_id for m in got] == [expected], f"step {i}: expected {expected}, got {got}"
            assert got[0].message_group == "single"
            # not acked yet: a second receive brings nothing
            assert c.receive(32, 30) == [], f"step {i}: the next message came while m{i} is in flight"
            c.ack(got[0])
        assert receive_for(c, 1.0, invisible_s=1) == []


# --- 3. tag filters ----------------------------------------------------------------------------

def test_tag_filters(broker, unique):
    topic = unique("py-tags")
    with producer(broker.endpoint, topic) as p:
        sent = {
            "a1": send(p, topic, b"a1", tag="a"),
            "b1": send(p, topic, b"b1", tag="b"),
            "c1": send(p, topic, b"c1", tag="c"),
            "untagged": send(p, topic, b"untagged"),
            "a2": send(p, topic, b"a2", tag="a"),
        }
    cases = {
        "a||b": {"a1", "b1", "a2"},
        "a": {"a1", "a2"},
        "c": {"c1"},
        "*": set(sent),
    }
    for expression, names in cases.items():
        want = {sent[n].message_id for n in names}
        wanted = len(want)
        with simple_consumer(broker.endpoint, unique("py-tags-g"), {topic: expression}) as c:
            got = receive_until(c, lambda g, wanted=wanted: len(g) >= wanted, timeout=10)
            for m in got:
                c.ack(m)
            got += receive_for(c, 1.0)  # nothing else may follow
            got_names = sorted(m.body.decode() for m in got)
            assert {m.message_id for m in got} == want and len(got) == len(want), (
                f"filter {expression!r}: received {got_names}, expected {sorted(names)}")
            for m in got:
                assert m.tag == sent[m.body.decode()].tag


# --- 4. ack ------------------------------------------------------------------------------------

def test_ack_prevents_redelivery_and_double_ack_fails(broker, unique):
    topic, group = unique("py-ack"), unique("py-ack-g")
    with producer(broker.endpoint, topic) as p:
        m = send(p, topic, b"ack me", tag="t")
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        got = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=1)
        assert [r.message_id for r in got] == [m.message_id]
        c.ack(got[0])
        with pytest.raises(BadRequestException) as err:
            c.ack(got[0])
        assert err.value.code == INVALID_RECEIPT_HANDLE, f"second ack: {err.value}"
        # The 1 s invisible time runs out: an acked message must not come back.
        again = receive_for(c, 2.5, invisible_s=1)
        assert again == [], f"acked message redelivered: {[(r.body, r.delivery_attempt) for r in again]}"


# --- 5. change invisible duration --------------------------------------------------------------

def test_change_invisible_duration_shortens_and_renews_handle(broker, unique):
    topic, group = unique("py-cid"), unique("py-cid-g")
    with producer(broker.endpoint, topic) as p:
        m = send(p, topic, b"change my visibility", tag="t", keys=["k"], properties={"p": "v"})
        m2 = send(p, topic, b"ack with the new handle", tag="t")
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        got = _by_id(receive_until(c, lambda g: len(g) >= 2, timeout=10, invisible_s=30))
        assert set(got) == {m.message_id, m2.message_id}
        first, second = got[m.message_id], got[m2.message_id]

        # A new handle comes back and the client uses it: the ack with it succeeds.
        old = second.receipt_handle
        c.change_invisible_duration(second, 20)
        assert second.receipt_handle and second.receipt_handle != old, "no new receipt handle after the change"
        c.ack(second)

        # 30 s -> 1 s: the message comes back long before the 30 s, with attempt 2.
        old = first.receipt_handle
        c.change_invisible_duration(first, 1)
        assert first.receipt_handle and first.receipt_handle != old
        t0 = time.monotonic()
        back = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30)
        elapsed = time.monotonic() - t0
        assert [r.message_id for r in back] == [m.message_id], f"expected only the changed message back, got {back}"
        r = back[0]
        assert r.delivery_attempt == 2
        assert (r.body, r.tag, r.keys, r.properties) == (m.body, m.tag, m.keys, m.properties)
        assert 0.5 <= elapsed <= 10, f"came back after {elapsed:.2f} s for a 1 s invisible duration"
        # the handle from before the redelivery is stale
        with pytest.raises(BadRequestException) as err:
            c.ack(first)
        assert err.value.code == INVALID_RECEIPT_HANDLE
        c.ack(r)
        assert receive_for(c, 1.5, invisible_s=1) == []


# --- 6. redelivery -----------------------------------------------------------------------------

def test_unacked_message_is_redelivered_with_next_attempt(broker, unique):
    topic, group = unique("py-redeliver"), unique("py-redeliver-g")
    with producer(broker.endpoint, topic) as p:
        m = send(p, topic, b"redeliver me", tag="r", keys=["key-r"], properties={"k": "v"})
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        got = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=2)
        assert [r.message_id for r in got] == [m.message_id] and got[0].delivery_attempt == 1
        t0 = time.monotonic()
        back = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=2)
        elapsed = time.monotonic() - t0
        assert [r.message_id for r in back] == [m.message_id], f"not redelivered\n{_broker_log(broker)}"
        r = back[0]
        assert r.delivery_attempt == 2
        assert (r.body, r.tag, r.keys, r.properties) == (m.body, m.tag, m.keys, m.properties)
        assert r.receipt_handle != got[0].receipt_handle
        assert elapsed >= 1.5, f"redelivered after {elapsed:.2f} s, before the 2 s invisible time ran out"

        t0 = time.monotonic()
        third = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30)
        assert [x.delivery_attempt for x in third] == [3] and time.monotonic() - t0 >= 1.5
        c.ack(third[0])
        assert receive_for(c, 1.5, invisible_s=1) == []


# --- 7. PushConsumer retry ---------------------------------------------------------------------

def test_push_consumer_retries_failed_message(broker, unique):
    """A failed consume (FAILURE or an exception) is nacked with the broker's first backoff step (1 s)
    and comes back once, attempt 2; a success is acked and never comes back.

    The failing messages are sent 0.8 s apart over more than 5 s, so their 1 s retry windows cover
    every phase of any periodic broker task (e.g. auto-renew) that could interfere with a nack.
    """
    topic, group = unique("py-push"), unique("py-push-g")

    def behaviour(message, previous_calls):
        if previous_calls == 0 and message.body.startswith(b"fail-result"):
            return ConsumeResult.FAILURE
        if previous_calls == 0 and message.body.startswith(b"fail-raise"):
            raise RuntimeError("listener failure on purpose")
        return ConsumeResult.SUCCESS

    listener = RecordingListener(behaviour)
    failing = [f"{kind}-{i}".encode() for i, kind in enumerate(["fail-result", "fail-raise"] * 4)]
    sent = {}
    with producer(broker.endpoint, topic) as p, push_consumer(broker.endpoint, group, {topic: "*"}, listener):
        sent[b"ok"] = send(p, topic, b"ok", tag="push")
        assert wait_for(lambda: listener.calls_for(sent[b"ok"].message_id), timeout=15), (
            f"the push consumer consumed nothing\n{_broker_log(broker)}")
        for body in failing:
            sent[body] = send(p, topic, body, tag="push")
            time.sleep(0.8)
        done = wait_for(lambda: all(len(listener.calls_for(sent[b].message_id)) >= 2 for b in failing), timeout=15)
        time.sleep(2.0)  # room for a wrong extra delivery (acked messages must not return)
        calls = {b: listener.calls_for(m.message_id) for b, m in sent.items()}

    not_retried = [b for b in failing if len(calls[b]) < 2]
    assert done and not not_retried, (
        f"not redelivered within 15 s of a nack with a 1 s backoff: {not_retried}\n"
        f"calls (message_id, body, attempt, time): {listener.calls}\n{_broker_log(broker)}")
    for body in failing:
        attempts = [c[2] for c in calls[body]]
        assert attempts == [1, 2], f"{body!r}: delivery attempts {attempts}"
        assert all(c[1] == body for c in calls[body])
        gap = calls[body][1][3] - calls[body][0][3]
        assert 0.5 <= gap <= 5, f"{body!r}: retried after {gap:.2f} s; the first backoff step is 1 s"
    assert [c[2] for c in calls[b"ok"]] == [1], f"b'ok': {calls[b'ok']}"


# --- 8. dead-letter queue ----------------------------------------------------------------------

def test_dead_letter_queue_after_max_attempts(broker, unique):
    topic, group, dlq_group = unique("py-dlq"), unique("py-dlq-g"), unique("py-dlq-reader")
    _create_group(broker, group, "--max-attempts", "2")
    with producer(broker.endpoint, topic) as p:
        m = send(p, topic, b"poison", tag="dlq", keys=["poison-key"], properties={"why": "never acked"})
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        deliveries = receive_until(c, lambda g: len(g) >= 2, timeout=10, invisible_s=1)
        assert [d.message_id for d in deliveries] == [m.message_id] * 2, f"deliveries: {deliveries}"
        assert [d.delivery_attempt for d in deliveries] == [1, 2]

        dlq_topic = f"%DLQ%{group}"
        with simple_consumer(broker.endpoint, dlq_group, {dlq_topic: "*"}) as dc:
            dead = receive_until(dc, lambda g: len(g) >= 1, timeout=10)
            assert len(dead) == 1, f"nothing in {dlq_topic}\n{_broker_log(broker)}"
            d = dead[0]
            assert d.topic == dlq_topic
            assert d.message_id == m.message_id and d.body == m.body
            assert d.tag == m.tag and d.keys == m.keys
            # the copy's own properties say where it came from and after how many deliveries (as RocketMQ's DLQ_ORIGIN_*)
            assert {k: v for k, v in d.properties.items() if not k.startswith("DLQ_")} == m.properties
            assert d.properties["DLQ_DELIVERY_ATTEMPTS"] == "2"
            assert not d.corrupted
            dc.ack(d)
            assert receive_for(dc, 1.0) == []
        # never a third delivery to the original group
        late = receive_for(c, 1.5, invisible_s=1)
        assert late == [], f"delivered again after the max attempts: {[x.delivery_attempt for x in late]}"


# --- 9. delayed messages -----------------------------------------------------------------------

def test_delayed_message_is_hidden_until_due(broker, unique):
    topic, group = unique("py-delay"), unique("py-delay-g")
    with producer(broker.endpoint, topic) as p:
        due_ms = int(time.time() * 1000) + 3000  # milliseconds, as the client documents
        in_ms = send(p, topic, b"due in ms", tag="d", delivery_timestamp=due_ms)
        due_s = int(time.time()) + 3  # whole seconds also reach the wire unchanged
        in_s = send(p, topic, b"due in s", tag="d", delivery_timestamp=due_s)
        plain = send(p, topic, b"not delayed", tag="d")
    due = {in_ms.message_id: due_ms / 1000, in_s.message_id: float(due_s)}

    arrived: dict[str, float] = {}
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        deadline = time.monotonic() + 12
        while len(arrived) < 3 and time.monotonic() < deadline:
            for r in c.receive(32, 30):
                arrived.setdefault(r.message_id, time.time())
                if r.message_id in due:
                    assert r.message_type == DELAY
                    assert r.delivery_attempt == 1
                c.ack(r)
    assert set(arrived) == {in_ms.message_id, in_s.message_id, plain.message_id}, (
        f"arrived: {arrived}, expected the two delayed messages and the plain one\n{_broker_log(broker)}")
    for mid, when in due.items():
        assert arrived[mid] >= when - 0.25, f"{mid} delivered {when - arrived[mid]:.2f} s before it was due"
        assert arrived[mid] <= when + 1 + 2 * AWAIT_S + 1, f"{mid} delivered {arrived[mid] - when:.2f} s late"
    assert arrived[plain.message_id] < min(due.values()), "the plain message waited for the delayed ones"
