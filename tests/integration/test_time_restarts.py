"""Delayed messages, half messages and recall handles across broker restarts (raw gRPC).

Pending timers and half messages live in RocksDB and an acknowledged send is fsync'ed (default
`sync` flush policy), so a graceful restart and a kill -9 both keep them: delayed messages still
pending are delivered at their due time, those that fell due while the broker was down right
after it comes back, each exactly once; a half message can still be committed or rolled back
with the transaction id of its send reply; a recall handle still cancels its message.

Every test runs a private broker (`fresh_broker`) and every wait is bounded.
"""

from __future__ import annotations

import time

import pytest
from mqwire import Conn, code_name, message

from rockmq.protocol import pb, rpc

INVISIBLE_MS = 2000  # short, so a lost ack would show up as a redelivery within the tests' quiet periods
PROMPT_S = 1.0  # messages due while the broker was down are delivered within this long after it is back


def _now_ms() -> int:
    return int(time.time() * 1000)


def _delayed(topic: str, body: str, due_ms: int) -> pb.Message:
    msg = message(topic, body, tag="t")
    msg.system_properties.message_type = pb.DELAY
    msg.system_properties.delivery_timestamp.FromMilliseconds(due_ms)
    return msg


def _half(topic: str, body: str, due_ms: int | None = None) -> pb.Message:
    msg = message(topic, body, tag="t")
    msg.system_properties.message_type = pb.TRANSACTION
    if due_ms is not None:
        msg.system_properties.delivery_timestamp.FromMilliseconds(due_ms)
    return msg


def _mid(msg: pb.Message) -> str:
    return msg.system_properties.message_id


def _end(conn: Conn, msg: pb.Message, transaction_id: str, commit: bool) -> str:
    """EndTransaction as a producer sends it; -> the status code's name."""
    reply = conn.mq.EndTransaction(rpc.EndTransactionRequest(
        topic=msg.topic, message_id=_mid(msg), transaction_id=transaction_id,
        resolution=pb.COMMIT if commit else pb.ROLLBACK, source=pb.SOURCE_CLIENT), timeout=10)
    return code_name(reply.status.code)


def _recall(conn: Conn, topic: str, handle: str) -> tuple[str, str]:
    """-> (status code name, recalled message id)."""
    reply = conn.mq.RecallMessage(rpc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=handle),
                                  timeout=10)
    return code_name(reply.status.code), reply.message_id


class Collector:
    """Receives from one POP group, acks everything at once, and records each delivery's arrival time."""

    def __init__(self, conn: Conn, group: str, topic: str) -> None:
        self.conn, self.group, self.topic = conn, group, topic
        self.arrivals: dict[str, list[float]] = {}  # message id -> wall-clock arrival times
        self.messages: dict[str, pb.Message] = {}

    def poll(self, poll_s: float) -> list[pb.Message]:
        code, msgs = self.conn.receive(self.group, self.topic, batch=32, invisible_ms=INVISIBLE_MS, poll_s=poll_s)
        at = time.time()
        assert code in (pb.OK, pb.MESSAGE_NOT_FOUND), code_name(code)
        for m in msgs:
            self.arrivals.setdefault(_mid(m), []).append(at)
            self.messages[_mid(m)] = m
        if msgs:
            reply = self.conn.ack(self.group, self.topic, *msgs)
            assert reply.status.code == pb.OK and all(e.status.code == pb.OK for e in reply.entries), reply
        return msgs

    def until(self, ids: set[str], within: float) -> None:
        """Receive until every id in `ids` arrived, or `within` seconds passed."""
        deadline = time.monotonic() + within
        while not ids <= self.arrivals.keys():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.poll(min(left, 1.0))

    def quiet(self, seconds: float) -> list[pb.Message]:
        """Everything delivered during about `seconds` (acked)."""
        got: list[pb.Message] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            got.extend(self.poll(min(left, 1.0)))
        return got

    def bodies(self, ids) -> list[str]:
        return sorted(self.messages[i].body.decode() if i in self.messages else f"<{i}>" for i in ids)


def _restart(broker, how: str) -> Conn:
    if how == "kill9":
        broker.kill()
    else:
        broker.stop()
    broker.start()
    return Conn(broker.endpoint)


def _log(broker) -> str:
    return "\n".join(list(broker.log)[-40:])


# --- delayed messages ------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["graceful", "kill9"])
def test_delayed_messages_survive_restart(fresh_broker, how):
    broker = fresh_broker
    topic, group = f"delay-restart-{how}", f"delay-restart-{how}-g"
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=4)

    t0 = _now_ms()
    early_due, down_due, late_due = t0 + 500, t0 + 1500, t0 + 4000
    early = [_delayed(topic, f"early-{i}", early_due) for i in range(4)]  # due and consumed before the restart
    # due while the broker is down; some share a due time, some 1 ms apart
    down = [_delayed(topic, f"down-{i}", down_due + i // 3) for i in range(12)]
    late = [_delayed(topic, f"late-{i}", late_due + i // 3) for i in range(12)]  # still pending after the restart
    entries = conn.send_ok(*late, *down, *early)  # in this order: the late ones get the first sequence numbers
    handles = [e.recall_handle for e in entries]
    assert all(handles) and len(set(handles)) == len(handles), "each delayed message needs its own recall handle"

    c = Collector(conn, group, topic)
    c.until({_mid(m) for m in early}, within=5)
    assert c.arrivals.keys() == {_mid(m) for m in early}, f"before the restart: {c.bodies(c.arrivals)}"
    assert min(min(a) for a in c.arrivals.values()) >= early_due / 1000 - 0.01, "delivered before the due time"
    conn.close()

    if how == "kill9":
        broker.kill()
    else:
        broker.stop()
    time.sleep(max(0.0, (down_due + 500) / 1000 - time.time()))  # the `down` ones fall due while it is down
    broker.start()
    ready = time.time()
    conn = Conn(broker.endpoint)
    try:
        # A second generation of timers, sent after the restart with the late ones' very due times (and,
        # were sequence numbers to restart from where they began, their very timer keys).
        fresh = [_delayed(topic, f"fresh-{i}", late_due + i // 3) for i in range(len(late))]
        conn.send_ok(*fresh)

        c = Collector(conn, group, topic)
        c.until({_mid(m) for m in down}, within=PROMPT_S + 3)
        missing = [m.body.decode() for m in down if _mid(m) not in c.arrivals]
        assert not missing, f"{how}: due while the broker was down, not delivered after it: {missing}\n{_log(broker)}"
        slow = {m.body.decode(): round(c.arrivals[_mid(m)][0] - ready, 2) for m in down
                if c.arrivals[_mid(m)][0] - ready > PROMPT_S}
        assert not slow, f"{how}: messages due during the downtime came late after the restart (s): {slow}"

        want = {_mid(m) for m in (*down, *late, *fresh)}
        c.until(want, within=max(0.0, late_due / 1000 - time.time()) + 4)
        c.quiet(2.5)  # no redelivery of anything acked, no second copy
    finally:
        conn.close()

    missing = [m.body.decode() for m in (*late, *fresh) if _mid(m) not in c.arrivals]
    assert not missing, f"{how}: pending delayed messages lost: {missing}\n{_log(broker)}"
    extra = c.arrivals.keys() - want
    assert not extra, f"{how}: delivered again after the restart: {c.bodies(extra)}"
    twice = {c.messages[i].body.decode(): len(a) for i, a in c.arrivals.items() if len(a) > 1}
    assert not twice, f"{how}: delivered more than once: {twice}"
    down_ids = {_mid(m) for m in down}
    for m in (*down, *late, *fresh):
        got = c.messages[_mid(m)]
        due = m.system_properties.delivery_timestamp.ToMilliseconds()
        arrived = c.arrivals[_mid(m)][0]
        assert arrived >= due / 1000 - 0.01, f"{m.body!r} delivered {due / 1000 - arrived:.3f} s before it was due"
        if _mid(m) in down_ids:
            continue
        assert arrived <= max(due / 1000, ready) + 1.5, f"{m.body!r} delivered {arrived - due / 1000:.2f} s late"
        assert got.body == m.body and got.system_properties.message_type == pb.DELAY
        assert got.system_properties.delivery_timestamp.ToMilliseconds() == due
        assert got.system_properties.delivery_attempt == 1


# --- half messages ---------------------------------------------------------------------------

def test_half_messages_survive_kill9(fresh_broker):
    broker = fresh_broker
    topic, group = "txn-kill9", "txn-kill9-g"
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=2)

    t0 = _now_ms()
    commit_later = _half(topic, "committed after the kill")
    rollback_later = _half(topic, "rolled back after the kill")
    committed_before = _half(topic, "committed before the kill")
    delayed_due = t0 + 3000
    delayed_half = _half(topic, "delayed half, committed after the kill", due_ms=delayed_due)
    halves = [commit_later, rollback_later, committed_before, delayed_half]
    txn = {_mid(m): e.transaction_id for m, e in zip(halves, conn.send_ok(*halves))}
    assert all(txn.values()) and len(set(txn.values())) == len(halves), txn

    assert _end(conn, committed_before, txn[_mid(committed_before)], commit=True) == "OK"
    c = Collector(conn, group, topic)
    c.until({_mid(committed_before)}, within=5)
    c.quiet(1.0)
    assert c.arrivals.keys() == {_mid(committed_before)}, f"before the kill: {c.bodies(c.arrivals)}"
    conn.close()

    conn = _restart(broker, "kill9")
    try:
        assert _end(conn, commit_later, txn[_mid(commit_later)], commit=True) == "OK", (
            f"half message lost by kill -9?\n{_log(broker)}")
        assert _end(conn, commit_later, txn[_mid(commit_later)], commit=True) == "OK"  # a repeat
        assert _end(conn, commit_later, txn[_mid(commit_later)], commit=False) == "INVALID_TRANSACTION_ID"
        assert _end(conn, rollback_later, txn[_mid(rollback_later)], commit=False) == "OK"
        assert _end(conn, rollback_later, txn[_mid(rollback_later)], commit=True) == "INVALID_TRANSACTION_ID"
        # the commit from before the kill is remembered
        assert _end(conn, committed_before, txn[_mid(committed_before)], commit=True) == "OK"
        assert _end(conn, committed_before, txn[_mid(committed_before)], commit=False) == "INVALID_TRANSACTION_ID"
        assert _end(conn, delayed_half, txn[_mid(delayed_half)], commit=True) == "OK"

        c = Collector(conn, group, topic)
        c.until({_mid(commit_later)}, within=5)
        c.until({_mid(commit_later), _mid(delayed_half)}, within=max(0.0, delayed_due / 1000 - time.time()) + 4)
        c.quiet(2.5)
    finally:
        conn.close()

    assert c.arrivals.keys() == {_mid(commit_later), _mid(delayed_half)}, (
        f"after the kill: delivered {c.bodies(c.arrivals)}, expected only the two committed after it\n{_log(broker)}")
    twice = {c.messages[i].body.decode(): len(a) for i, a in c.arrivals.items() if len(a) > 1}
    assert not twice, f"delivered more than once: {twice}"
    for m in (commit_later, delayed_half):
        got = c.messages[_mid(m)]
        assert got.body == m.body and got.system_properties.message_type == pb.TRANSACTION
        assert got.system_properties.delivery_attempt == 1
    assert c.arrivals[_mid(delayed_half)][0] >= delayed_due / 1000 - 0.01, "delayed half delivered before its due time"


# --- recall handles --------------------------------------------------------------------------

def test_recall_handle_works_after_restarts(fresh_broker):
    broker = fresh_broker
    topic, group = "recall-restart", "recall-restart-g"
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=2)

    t0 = _now_ms()
    due = t0 + 4000
    gone = _delayed(topic, "delivered before the restarts", t0 + 500)
    r1, r2, kept = (_delayed(topic, name, due) for name in ("recalled after a restart", "recalled after kill -9", "kept"))
    sent = [gone, r1, r2, kept]
    handle = {_mid(m): e.recall_handle for m, e in zip(sent, conn.send_ok(*sent))}
    assert all(handle.values()), handle

    c = Collector(conn, group, topic)
    c.until({_mid(gone)}, within=5)
    assert c.arrivals.keys() == {_mid(gone)}, c.bodies(c.arrivals)
    conn.close()

    conn = _restart(broker, "graceful")
    try:
        assert _recall(conn, topic, handle[_mid(r1)]) == ("OK", _mid(r1)), f"after a graceful restart\n{_log(broker)}"
        assert _recall(conn, topic, handle[_mid(r1)])[0] == "NOT_FOUND", "recalled twice"
        assert _recall(conn, topic, handle[_mid(gone)])[0] == "NOT_FOUND", "recall of a delivered message"
    finally:
        conn.close()

    conn = _restart(broker, "kill9")
    try:
        assert _recall(conn, topic, handle[_mid(r2)]) == ("OK", _mid(r2)), f"after kill -9\n{_log(broker)}"
        assert _recall(conn, topic, handle[_mid(r1)])[0] == "NOT_FOUND", "the recall before the kill was undone"
        assert _recall(conn, topic, "not-a-recall-handle")[0] == "BAD_REQUEST"

        c = Collector(conn, group, topic)
        c.until({_mid(kept)}, within=max(0.0, due / 1000 - time.time()) + 4)
        c.quiet(1.5)
        assert c.arrivals.keys() == {_mid(kept)}, (
            f"expected only {kept.body!r} delivered after the restarts, got {c.bodies(c.arrivals)}\n{_log(broker)}")
        assert len(c.arrivals[_mid(kept)]) == 1 and c.arrivals[_mid(kept)][0] >= due / 1000 - 0.01
        assert _recall(conn, topic, handle[_mid(kept)])[0] == "NOT_FOUND", "recall of a delivered message"
    finally:
        conn.close()
