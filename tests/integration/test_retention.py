"""Retention on a real broker: old messages go by age and by the size cap, the minimum offset
moves up without gaps, a queue keeps its newest message, and offsets are never reused after a
restart."""

from __future__ import annotations

import time

from broker_process import BrokerProcess
from mqwire import Conn, message
from waiting import wait_for

from rockmq.protocol import pb

CHECK_S = "0.2"


def _range(conn: Conn, topic: str) -> tuple[int, int]:
    (q,) = conn.describe_topic(topic).queues
    return q.min_offset, q.max_offset


def _wait_for_min(conn: Conn, topic: str, want_min: int, timeout: float = 10.0) -> None:
    wait_for(lambda: _range(conn, topic)[0] == want_min, timeout, 0.1, what=f"min offset {want_min} in {topic}")


def test_old_messages_go_and_offsets_are_never_reused(tmp_path):
    broker = BrokerProcess(tmp_path / "data", env={"ROCKMQ_RETENTION_S": "2", "ROCKMQ_RETENTION_CHECK_S": CHECK_S}).start()
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic("aging", queues=1)
        conn.send_ok(*(message("aging", f"old-{i}") for i in range(20)))
        time.sleep(2.2)
        conn.send_ok(*(message("aging", f"new-{i}") for i in range(5)))
        _wait_for_min(conn, "aging", 20)
        assert _range(conn, "aging") == (20, 25)
        assert conn.pull("reader", "aging", 0, 0)[0] == pb.ILLEGAL_OFFSET  # gone: readers move to the minimum
        code, msgs, nxt = conn.pull("reader", "aging", 0, 20, batch=100)
        assert code == pb.OK and [m.body for m in msgs] == [f"new-{i}".encode() for i in range(5)] and nxt == 25
        assert [m.system_properties.queue_offset for m in msgs] == list(range(20, 25))

        _wait_for_min(conn, "aging", 24, timeout=6)  # all old now: the newest stays
        conn.close()
        broker.stop()
        broker.start()
        conn = Conn(broker.endpoint)
        assert _range(conn, "aging") == (24, 25)
        (entry,) = conn.send_ok(message("aging", "after-restart"))
        code, msgs, _ = conn.pull("reader", "aging", 0, 24, batch=10)
        assert [(m.system_properties.queue_offset, m.body) for m in msgs] == [(24, b"new-4"), (25, b"after-restart")]
        conn.close()
    finally:
        broker.kill()


def test_the_size_cap_removes_the_oldest_first(tmp_path):
    broker = BrokerProcess(tmp_path / "data", env={"ROCKMQ_RETENTION_BYTES": str(400_000),
                                                    "ROCKMQ_RETENTION_CHECK_S": CHECK_S}).start()
    try:
        conn = Conn(broker.endpoint)
        conn.create_topic("capped", queues=1)
        body = b"x" * 1024
        for round_ in range(8):  # 8 x 250 KiB, spread in time
            conn.send_ok(*(message("capped", body, keys=(f"r{round_}",)) for _ in range(250)))
            time.sleep(0.3)
        wait_for(lambda: _range(conn, "capped")[1] - _range(conn, "capped")[0] <= 600, 15, 0.2, what="at most 600 messages kept")
        low, high = _range(conn, "capped")
        assert high == 2000 and low > 0
        kept = conn.pull_all("capped", 0)
        assert [m.system_properties.queue_offset for m in kept] == list(range(low, 2000))
        assert kept[-1].system_properties.keys == ["r7"]
        conn.close()
    finally:
        broker.kill()
