"""Retention frees everything a removed message owns (issue 20 §2.5), and idle groups lose their matches.

A topic is filled with messages that use every owning feature: tags and properties that two filtered
groups (TAG and SQL92) match, keys and producer de-duplication, delayed messages (timers),
transactional messages (half messages, outcome markers), staged and published chunks (the Spark
sink's Stage, publish jobs), POP deliveries never acked (checkpoints, then retries of an idle group)
and acked ones. Then the messages expire (a 2 s retention) and the broker is stopped: the live keys
of every family, counted offline, must be those of the store before the fill (the log keeps one
message per queue, the newest, as retention promises), and after a full compaction the families'
bytes are reported beside the empty store's.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker_process import BrokerProcess
from chaos_scale import scaled
from mqwire import META, RPC_TIMEOUT, Conn, message, staged_parts
from rocksdict import BottommostLevelCompaction, CompactOptions, Options, Rdict
from waiting import wait_for

from rockmq.protocol import batch as batch_pb
from rockmq.protocol import batch_grpc, pb, rpc
from rockmq.store import keys
from rockmq.store.db import Store
from rockmq.store.schema import Family

TOPIC = "chaos-retention"
QUEUES = 4
TAGGED, FILTERED = "g-tagged", "g-sql"  # filtered groups: one consumes a little then idles, one never acks
RETENTION_S = 2
DELAY_S = 0.5  # delayed messages' delay
DEDUP_WINDOW_S = 1
ENV = {"ROCKMQ_RETENTION_S": str(RETENTION_S), "ROCKMQ_RETENTION_CHECK_S": "0.3", "ROCKMQ_DEDUP_WINDOW_S": str(DEDUP_WINDOW_S),
       "ROCKMQ_TXN_CHECK_FIRST_S": "60"}
# The families a message owns entries in, and the staging family's kinds (chunks, their index, publish jobs).
OWNED = ("log", "timers", "retry", "inflight", "checkpoints", "matches", "dedup", "txn", "txnchecks")
FILE_SIZES = ("live-sst-files-size", "live-blob-file-size")
STAGED = {"staged chunks": keys.STAGED_CHUNK, "staged index": keys.STAGED_INDEX, "publish jobs": keys.PUBLISH_JOB}


def _census(data: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Live keys per family (and staging kind), then bytes per family on disk after a full
    compaction (to the bottom level: what deletes hid is gone); read offline (the broker stopped)."""
    store = Store(data)
    try:
        counts = {str(f): sum(1 for _ in store.scan(f, b"", b"\xff" * 64)) for f in Family}
        for name, kind in STAGED.items():
            counts[name] = sum(1 for _ in store.scan_prefix("staging", kind))
    finally:
        store.close()
    db = Rdict(str(data), options=Options(raw_mode=True), column_families={str(f): Options(raw_mode=True) for f in Family})
    try:
        full = CompactOptions()
        full.set_bottommost_level_compaction(BottommostLevelCompaction.force())
        sizes = {}
        for f in Family:
            family = db.get_column_family(f)
            family.compact_range(None, None, full)
            sizes[str(f)] = sum(family.property_int_value(f"rocksdb.{name}") or 0 for name in FILE_SIZES)
        return counts, sizes
    finally:
        db.close()


def _delayed(body: str, due_ms: int) -> pb.Message:
    msg = message(TOPIC, body, tag="a", keys=(f"k-{body}",))
    msg.system_properties.message_type = pb.DELAY
    msg.system_properties.delivery_timestamp.FromMilliseconds(due_ms)
    return msg


def _half(body: str) -> pb.Message:
    msg = message(TOPIC, body, tag="b", properties={"color": "red"})
    msg.system_properties.message_type = pb.TRANSACTION
    return msg


def _stage(stub: batch_grpc.BatchMessagingStub, msgs: list[pb.Message]) -> batch_pb.StagedChunk:
    parts = [staged_parts(m) for m in msgs]
    reply = stub.Stage(batch_pb.StageRequest(system_properties=[sp for sp, _ in parts], contents=[c for _, c in parts],
                                             deduplicate=True), timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.OK, reply.status
    return batch_pb.StagedChunk(handle=reply.handle, count=reply.count)


def _fill(conn: Conn, n: int) -> tuple[int, float]:
    """Send `n` messages of every kind; -> (messages that entered the topic's queues, when the delayed ones are due)."""
    colors = ("red", "blue")
    batch = 64
    for start in range(0, n, batch):  # tagged, with keys and properties: both filtered groups match some
        conn.send_ok(*(message(TOPIC, f"m{i}", tag="abc"[i % 3], keys=(f"k{i}", f"order-{i // 7}"),
                               properties={"color": colors[i % 2]}) for i in range(start, min(n, start + batch))))
    due = int((time.time() + DELAY_S) * 1000)
    delayed = max(1, n // 10)
    for start in range(0, delayed, batch):
        conn.send_ok(*(_delayed(f"d{i}", due) for i in range(start, min(delayed, start + batch))))
    halves = max(1, n // 50)
    for i in range(halves):  # committed at once: the outcome marker stays for the dedup window
        (entry,) = conn.send_ok(_half(f"t{i}"))
        reply = conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name=TOPIC), message_id=entry.message_id, transaction_id=entry.transaction_id,
            resolution=pb.COMMIT, source=pb.SOURCE_CLIENT), metadata=META, timeout=RPC_TIMEOUT)
        assert reply.status.code == pb.OK, reply.status
    stub = batch_grpc.BatchMessagingStub(conn.channel)
    staged = max(2, n // 20)
    published = [_stage(stub, [message(TOPIC, f"s{i}", tag="c", keys=(f"s{i}",)) for i in range(j, j + 10)])
                 for j in range(0, staged, 10)]
    reply = stub.PublishStaged(batch_pb.PublishStagedRequest(sink_id="chaos-sink", batch_id=1, chunks=published,
                                                             retain_ms=1), timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.OK and reply.published == sum(c.count for c in published), reply
    dropped = _stage(stub, [message(TOPIC, "never-published", tag="a")])
    stub.DiscardStaged(batch_pb.DiscardStagedRequest(handles=[dropped.handle]), timeout=RPC_TIMEOUT)
    return n + delayed + halves + reply.published, due / 1000


def _consume(conn: Conn, n: int) -> None:
    """TAGGED takes some and never acks them (their invisible time runs out: retries), then idles;
    FILTERED takes and acks some, then idles too."""
    got = conn.receive_n(TAGGED, TOPIC, max(1, n // 20), invisible_ms=300, tag="a||b")
    assert got
    taken = conn.receive_n(FILTERED, TOPIC, max(1, n // 20), sql="color = 'red'")
    assert taken
    assert all(e.status.code == pb.OK for e in conn.ack(FILTERED, TOPIC, *taken).entries)


def _tail(conn: Conn) -> float:
    """One plain message per queue, sent last: the newest of each queue, which retention keeps,
    owns nothing; -> when (time.monotonic())."""
    for q in range(QUEUES):
        msg = message(TOPIC, f"tail-{q}")
        msg.system_properties.queue_id = q
        conn.send_ok(msg)
    return time.monotonic()


def _expired(conn: Conn, tail_at: float, timeout: float) -> None:
    """Wait until every queue holds only its newest message, and until the tail's de-dup entries
    expired: their bucket and the next one ended (two windows at most), then a housekeeping tick."""
    wait_for(lambda: all(q.max_offset - q.min_offset == 1 for q in conn.describe_topic(TOPIC).queues), timeout, 0.1,
             what="every message but each queue's newest removed")
    time.sleep(max(0.0, tail_at + 2 * DEDUP_WINDOW_S + 1.0 - time.monotonic()))


def _table(before: dict[str, int], after: dict[str, int]) -> str:
    return "\n".join(f"  {name:14} {before[name]:>10} {after[name]:>10}" for name in before)


def test_retention_frees_what_removed_messages_own(tmp_path: Path) -> None:
    n = scaled(400, 20_000)
    data = tmp_path / "data"
    broker = BrokerProcess(data, env=ENV).start()
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic(TOPIC, queues=QUEUES)
        for group, kw in ((TAGGED, {"tag": "a||b"}), (FILTERED, {"sql": "color = 'red'"})):  # registered before the fill
            assert conn.receive(group, TOPIC, poll_s=0, **kw)[0] == pb.MESSAGE_NOT_FOUND
        _expired(conn, _tail(conn), 10)
        conn.close()
        broker.stop()
        empty_keys, empty_bytes = _census(data)

        broker.start()
        conn = Conn(broker.endpoint)
        started = time.monotonic()
        entered, due = _fill(conn, n)
        _consume(conn, n)
        time.sleep(max(0.0, due + 0.5 - time.time()))  # the delayed messages entered their queues: the tail comes last
        _expired(conn, _tail(conn), 30 + n / 200)
        filled_for = time.monotonic() - started
        conn.close()
        broker.stop()
        keys_after, bytes_after = _census(data)
    finally:
        broker.kill()
    print(f"\n{entered} messages, expired within {filled_for:.1f} s; live keys: empty store, after expiry\n"
          f"{_table(empty_keys, keys_after)}\nbytes after a full compaction: empty store, after expiry\n"
          f"{_table(empty_bytes, bytes_after)}")
    leaked = {f: (empty_keys[f], keys_after[f]) for f in (*OWNED, *STAGED) if keys_after[f] != empty_keys[f]}
    assert not leaked, f"families that kept keys of removed messages (empty store, after): {leaked}"
    grown = {f: (empty_bytes[f], bytes_after[f]) for f in OWNED if bytes_after[f] > empty_bytes[f] + 256}
    assert not grown, f"families bigger on disk than the empty store's (bytes: empty store, after): {grown}"


def test_an_idle_group_loses_its_matches_and_misses_nothing(tmp_path: Path) -> None:
    """A filtered group whose position stops moving for `idle_group_matches_s` loses its match
    entries (none left in the store); when it comes back it still gets every message its filter takes."""
    data = tmp_path / "data"
    env = {"ROCKMQ_IDLE_GROUP_MATCHES_S": "1", "ROCKMQ_RETENTION_CHECK_S": "0.3"}
    broker = BrokerProcess(data, env=env).start()
    group, wanted = "g-idle", scaled(40, 2000)
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic(TOPIC, queues=QUEUES)
        assert conn.receive(group, TOPIC, poll_s=0, tag="a")[0] == pb.MESSAGE_NOT_FOUND  # registered
        for start in range(0, 2 * wanted, 64):
            conn.send_ok(*(message(TOPIC, f"m{i}", tag="ab"[i % 2]) for i in range(start, min(2 * wanted, start + 64))))
        first = conn.receive_n(group, TOPIC, 5, tag="a")
        assert len(first) == 5 and conn.ack(group, TOPIC, *first).status.code == pb.OK
        wait_for(lambda: any("has not consumed" in line for line in broker.log), 10, 0.1, what="the idle group's matches dropped")
        conn.close()
        broker.stop()
        assert _census(data)[0]["matches"] == 0

        broker.start()
        conn = Conn(broker.endpoint)
        rest = conn.receive_n(group, TOPIC, wanted - 5, tag="a", within=20)  # registered again: the backlog is evaluated
        conn.send_ok(*(message(TOPIC, f"late{i}", tag="ab"[i % 2]) for i in range(20)))
        late = conn.receive_n(group, TOPIC, 10, tag="a")  # ... and new messages indexed
        bodies = [m.body.decode() for m in (*first, *rest, *late)]
        assert sorted(bodies) == sorted([f"m{i}" for i in range(0, 2 * wanted, 2)] + [f"late{i}" for i in range(0, 20, 2)])
        assert conn.receive(group, TOPIC, poll_s=0, tag="a")[1] == []
        conn.close()
    finally:
        broker.kill()


def test_a_receive_parked_when_its_groups_matches_go_still_gets_what_comes(tmp_path: Path) -> None:
    """A FIFO group's receive waits on a held queue while the group idles and its matches are
    dropped; the receive, woken by the ack, must evaluate the queue, not read the dropped matches
    (which would skip every message after the acked one)."""
    broker = BrokerProcess(tmp_path / "data", env={"ROCKMQ_IDLE_GROUP_MATCHES_S": "1", "ROCKMQ_RETENTION_CHECK_S": "0.3"}).start()
    group = "g-fifo"
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic(TOPIC, queues=1)
        conn.create_group(group, fifo=True)
        assert conn.receive(group, TOPIC, poll_s=0, tag="a")[0] == pb.MESSAGE_NOT_FOUND  # registered
        conn.send_ok(*(message(TOPIC, f"x{i}", tag="a", group="x") for i in range(3)))
        (first,) = conn.receive_n(group, TOPIC, 1, tag="a")
        with ThreadPoolExecutor(1) as pool:
            parked = pool.submit(conn.receive, group, TOPIC, tag="a", batch=1, poll_s=8)  # the queue is held
            wait_for(lambda: any("has not consumed" in line for line in broker.log), 10, 0.1,
                     what="the idle group's matches dropped")
            assert conn.ack(group, TOPIC, first).status.code == pb.OK
            code, got = parked.result(timeout=15)
        assert code == pb.OK and [m.body for m in got] == [b"x1"], (pb.Code.Name(code), got)
        conn.close()
    finally:
        broker.kill()
