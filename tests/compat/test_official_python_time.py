"""Delayed-message recall and transactional messages with the official RocketMQ 5 Python client.

The unmodified `rocketmq` client (5.1.2) against a real `rockmq serve`: recall of pending delayed
messages, half messages committed or rolled back by the client, and orphaned transactions the
broker resolves by asking the producer's TransactionChecker over the Telemetry stream.

Recall, commit and rollback run on the session `broker` (first transaction check after 6 s, far
beyond these tests). The orphan-check tests use a private broker with fast check settings:
first check after 1 s, then every 1 s, at most 3 checks before the broker rolls back.
Every wait is bounded; every client is shut down by a context manager.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from broker_process import BrokerProcess
from official_client import (
    AWAIT_S,
    DELAY,
    config,
    make_message,
    producer,
    receive_for,
    receive_until,
    simple_consumer,
    wait_for,
)
from rocketmq import Message, Producer, TransactionChecker, TransactionResolution
from rocketmq.v5.exception import ClientException, NotFoundException

TRANSACTION = 4  # Message.message_type code of transactional messages
INVALID_TRANSACTION_ID = 40008
NOT_FOUND = 40400

CHECK_FIRST_S, CHECK_INTERVAL_S, CHECK_MAX = 1, 1, 3
FAST_CHECKS = {"ROCKMQ_TXN_CHECK_FIRST_S": str(CHECK_FIRST_S),
               "ROCKMQ_TXN_CHECK_INTERVAL_S": str(CHECK_INTERVAL_S),
               "ROCKMQ_TXN_CHECK_MAX": str(CHECK_MAX)}


@pytest.fixture(scope="module")
def checking_broker(tmp_path_factory: pytest.TempPathFactory):
    """A private broker that checks undecided transactions fast (1 s, every 1 s, 3 times)."""
    b = BrokerProcess(tmp_path_factory.mktemp("txn-check-broker"), env=FAST_CHECKS).start()
    yield b
    b.stop()


class RecordingChecker(TransactionChecker):
    """Records every check; `decide(message)` returns the resolution (or raises)."""

    def __init__(self, decide: Callable[[Message], TransactionResolution]) -> None:
        self.decide = decide
        self.lock = threading.Lock()
        self.calls: list[dict] = []

    def check(self, message: Message) -> TransactionResolution:
        with self.lock:
            self.calls.append(dict(message_id=message.message_id, topic=message.topic, body=message.body,
                                   tag=message.tag, keys=message.keys, properties=dict(message.properties),
                                   at=time.monotonic()))
        return self.decide(message)

    def calls_for(self, message_id: str) -> list[dict]:
        with self.lock:
            return [c for c in self.calls if c["message_id"] == message_id]

    def count(self) -> int:
        with self.lock:
            return len(self.calls)

    def summary(self) -> str:
        """The checks so far, compactly: body @ seconds after the first check."""
        with self.lock:
            t0 = self.calls[0]["at"] if self.calls else 0.0
            return ", ".join(f"{c['body'][:24]!r}@{c['at'] - t0:.2f}s" for c in self.calls) or "no checks"

    def last_call_at(self) -> float | None:
        with self.lock:
            return self.calls[-1]["at"] if self.calls else None


@contextlib.contextmanager
def txn_producer(endpoint: str, topic: str, checker: TransactionChecker) -> Iterator[Producer]:
    p = Producer(config(endpoint), (topic,), checker)
    p.startup()
    try:
        yield p
    finally:
        p.shutdown()


def _send_half(p: Producer, topic: str, body: bytes, **kw):
    """Send one half message; -> (the sent Message, its Transaction, the SendReceipt)."""
    txn = p.begin_transaction()
    m = make_message(topic, body, **kw)
    receipt = p.send(m, txn)
    assert receipt.message_id and receipt.message_id == m.message_id, (receipt.message_id, m.message_id)
    assert receipt.transaction_id, "a half message's send receipt carries no transaction id"
    assert m.message_type == TRANSACTION
    return m, txn, receipt


def _end_code(end: Callable[[], object]) -> int:
    """Run Transaction.commit or .rollback; -> 0 if the broker accepted it, else its refusal's status code."""
    try:
        end()
    except ClientException as e:  # the client raises a plain ClientException with the status code
        return e.code
    return 0


def _never_checked(_message: Message) -> TransactionResolution:
    raise AssertionError("this test's transactions end before any check is due")


def _broker_log(broker) -> str:
    return "\n".join(list(broker.log)[-40:])


# --- recall of delayed messages ------------------------------------------------------------

def test_recall_pending_delayed_message(broker, unique):
    topic, group = unique("py-recall"), unique("py-recall-g")
    with producer(broker.endpoint, topic) as p, simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        now_ms = int(time.time() * 1000)
        recalled = make_message(topic, b"recalled before due", tag="r", delivery_timestamp=now_ms + 2500)
        kept = make_message(topic, b"delivered, then recalled too late", tag="r", delivery_timestamp=now_ms + 1000)
        r_recalled, r_kept = p.send(recalled), p.send(kept)
        for m, r in ((recalled, r_recalled), (kept, r_kept)):
            assert r.message_id == m.message_id
            assert r.recall_handle, f"no recall handle for the delayed message {m.body!r}"
        assert r_recalled.recall_handle != r_kept.recall_handle

        assert p.recall_message(topic, r_recalled.recall_handle) == recalled.message_id
        with pytest.raises(NotFoundException) as err:
            p.recall_message(topic, r_recalled.recall_handle)
        assert err.value.code == NOT_FOUND, f"second recall of a recalled message: {err.value}"

        # Until well after the recalled message's due time only the other one arrives, once.
        got = receive_until(c, lambda g: len(g) >= 1, timeout=8)
        arrived_ms = time.time() * 1000
        assert [m.message_id for m in got] == [kept.message_id], (
            f"expected only {kept.body!r}, got {[m.body for m in got]}\n{_broker_log(broker)}")
        assert got[0].message_type == DELAY and got[0].body == kept.body
        c.ack(got[0])
        assert arrived_ms >= now_ms + 1000 - 250, f"delivered {now_ms + 1000 - arrived_ms:.0f} ms before its due time"
        late = receive_for(c, max(1.5, (now_ms + 2500) / 1000 - time.time() + 1.5), invisible_s=1)
        assert late == [], f"delivered after the recall (or again): {[(m.body, m.delivery_attempt) for m in late]}"

        # The other one was delivered: its handle no longer recalls anything.
        with pytest.raises(NotFoundException) as err:
            p.recall_message(topic, r_kept.recall_handle)
        assert err.value.code == NOT_FOUND, f"recall of a delivered message: {err.value}"


# --- transactions ended by the client --------------------------------------------------------

def test_transaction_commit_makes_message_visible_once(broker, unique):
    topic, group = unique("py-txn-commit"), unique("py-txn-commit-g")
    checker = RecordingChecker(_never_checked)
    with txn_producer(broker.endpoint, topic, checker) as p, simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        assert receive_for(c, 0.1) == []  # the consumer is polling before the half message exists
        m, txn, _ = _send_half(p, topic, b"half, then committed", tag="t", keys=["txn-key"], properties={"p": "v"})
        hidden = receive_for(c, 2.0, invisible_s=1)
        assert hidden == [], f"a half message was delivered before its commit: {[x.body for x in hidden]}"

        txn.commit()
        t0 = time.monotonic()
        got = receive_until(c, lambda g: len(g) >= 1, timeout=10)
        elapsed = time.monotonic() - t0
        assert [x.message_id for x in got] == [m.message_id], f"after commit: {[x.body for x in got]}"
        r = got[0]
        assert (r.topic, r.body, r.tag, r.keys, r.properties) == (topic, m.body, m.tag, m.keys, m.properties)
        assert r.message_type == TRANSACTION and r.delivery_attempt == 1 and not r.corrupted
        assert elapsed <= AWAIT_S + 2, f"delivered {elapsed:.2f} s after the commit"
        c.ack(r)

        txn.commit()  # the same resolution again is fine
        assert _end_code(txn.rollback) == INVALID_TRANSACTION_ID, "rollback after commit was not refused"
        again = receive_for(c, 1.5, invisible_s=1)
        assert again == [], f"committed message delivered more than once: {[x.delivery_attempt for x in again]}"
    assert checker.calls == []


def test_transaction_rollback_is_never_delivered(broker, unique):
    topic, group = unique("py-txn-rollback"), unique("py-txn-rollback-g")
    checker = RecordingChecker(_never_checked)
    with txn_producer(broker.endpoint, topic, checker) as p, simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        m, txn, _ = _send_half(p, topic, b"half, then rolled back", tag="t")
        assert receive_for(c, 1.0, invisible_s=1) == []
        txn.rollback()
        txn.rollback()  # the same resolution again is fine
        assert _end_code(txn.commit) == INVALID_TRANSACTION_ID, "commit after rollback was not refused"
        # A normal message after it proves the consumer does get what is there.
        marker = make_message(topic, b"marker", tag="t")
        p.send(marker)
        got = receive_until(c, lambda g: any(x.message_id == marker.message_id for x in g), timeout=10)
        for x in got:
            c.ack(x)
        got += receive_for(c, 1.5, invisible_s=1)
        assert [x.body for x in got] == [b"marker"], f"rolled back message delivered: {[x.body for x in got]}"
    assert checker.calls == []


# --- orphaned transactions checked by the broker --------------------------------------------

def test_orphaned_transactions_resolved_by_checker(checking_broker, unique):
    broker = checking_broker
    topic, group = unique("py-txn-orphan"), unique("py-txn-orphan-g")

    def decide(message: Message) -> TransactionResolution:
        return TransactionResolution.COMMIT if message.body.startswith(b"commit") else TransactionResolution.ROLLBACK

    checker = RecordingChecker(decide)
    with txn_producer(broker.endpoint, topic, checker) as p:
        to_commit, txn_c, _ = _send_half(p, topic, b"commit me, checker", tag="orphan", keys=["ck"],
                                         properties={"side": "commit"})
        to_roll, txn_r, _ = _send_half(p, topic, b"roll me back, checker", tag="orphan", keys=["rk"],
                                       properties={"side": "rollback"})
        # The transactions are never ended by the client: the broker must ask.
        both = wait_for(lambda: checker.calls_for(to_commit.message_id) and checker.calls_for(to_roll.message_id),
                        timeout=CHECK_FIRST_S + 6)
        assert both, f"checker not asked within {CHECK_FIRST_S + 6} s: {checker.summary()}\n{_broker_log(broker)}"

        with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
            got = receive_until(c, lambda g: len(g) >= 1, timeout=8)
            for x in got:
                c.ack(x)
            got += receive_for(c, 2 * CHECK_INTERVAL_S + 0.5, invisible_s=1)  # room for a wrong extra check
        assert [x.message_id for x in got] == [to_commit.message_id], (
            f"expected only {to_commit.body!r} delivered, got {[x.body for x in got]}\n{_broker_log(broker)}")
        r = got[0]
        assert (r.body, r.tag, r.keys, r.properties) == (to_commit.body, to_commit.tag, to_commit.keys, to_commit.properties)
        assert r.message_type == TRANSACTION and r.delivery_attempt == 1

        for m in (to_commit, to_roll):
            calls = checker.calls_for(m.message_id)
            assert len(calls) == 1, f"{m.body!r} checked {len(calls)} times, though answered at once: {checker.summary()}"
            call = calls[0]
            assert (call["topic"], call["body"], call["tag"]) == (topic, m.body, m.tag), call
            assert (call["keys"], call["properties"]) == (m.keys, m.properties), call

        # The broker's decision stands: the same answer again is OK, the opposite is refused.
        assert _end_code(txn_c.commit) == 0, "repeating the checker's COMMIT was refused"
        assert _end_code(txn_c.rollback) == INVALID_TRANSACTION_ID, "rollback after the checker's commit was not refused"
        assert _end_code(txn_r.rollback) == 0, "repeating the checker's ROLLBACK was refused"
        assert _end_code(txn_r.commit) == INVALID_TRANSACTION_ID, "commit after the checker's rollback was not refused"


def test_unanswered_checks_end_in_rollback(checking_broker, unique):
    broker = checking_broker
    topic, group = unique("py-txn-unknown"), unique("py-txn-unknown-g")

    def decide(message: Message) -> TransactionResolution:
        if message.body.startswith(b"unspecified"):
            return TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED  # "don't know yet"
        raise RuntimeError("the checker cannot tell (on purpose)")

    checker = RecordingChecker(decide)
    with txn_producer(broker.endpoint, topic, checker) as p:
        unknown, txn_u, _ = _send_half(p, topic, b"unspecified resolution", tag="orphan")
        raising, txn_x, _ = _send_half(p, topic, b"checker raises", tag="orphan")
        ids = (unknown.message_id, raising.message_id)

        # Checks at about 1, 2, 3 s; at about 4 s the broker gives up. Wait for the checks to stop.
        deadline = time.monotonic() + CHECK_FIRST_S + CHECK_MAX * CHECK_INTERVAL_S + 8
        while time.monotonic() < deadline:
            last = checker.last_call_at()
            if all(len(checker.calls_for(i)) >= CHECK_MAX for i in ids) and time.monotonic() - last > 2.5 * CHECK_INTERVAL_S:
                break
            time.sleep(0.1)
        counts = {i: len(checker.calls_for(i)) for i in ids}
        for body, mid in ((unknown.body, unknown.message_id), (raising.body, raising.message_id)):
            n = counts[mid]
            assert n >= 2 and CHECK_MAX - 1 <= n <= CHECK_MAX + 1, (
                f"{body!r}: checked {n} times, txn_check_max is {CHECK_MAX}: {checker.summary()}\n{_broker_log(broker)}")
            for call in checker.calls_for(mid):
                assert (call["topic"], call["body"]) == (topic, body), call
            times = [call["at"] for call in checker.calls_for(mid)]
            gaps = [b - a for a, b in zip(times, times[1:])]
            assert all(g >= 0.5 * CHECK_INTERVAL_S for g in gaps), f"{body!r}: checks {gaps} s apart"

        with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
            got = receive_for(c, 2.0, invisible_s=1)
        assert got == [], f"an unresolved transaction was delivered: {[x.body for x in got]}\n{_broker_log(broker)}"
        assert {i: len(checker.calls_for(i)) for i in ids} == counts, (
            f"checks went on after the broker gave up: {checker.summary()}")

        # The broker rolled both back: a late commit is refused, a late rollback agrees.
        code = _end_code(txn_u.commit)
        assert code == INVALID_TRANSACTION_ID, (
            f"a commit after the last check was {'accepted' if code == 0 else f'refused with {code}'}: "
            f"the broker had not rolled the transaction back")
        assert _end_code(txn_x.rollback) == 0, "a rollback agreeing with the broker's was refused"
