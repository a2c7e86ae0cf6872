"""The unmodified official Python client against a three-broker cluster: pointed at one broker
it reaches all of them, and with a broker killed under load it keeps sending to the others."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from mqwire import Conn  # noqa: E402
from official_client import producer, receive_until, send, simple_consumer  # noqa: E402
from waiting import wait_for  # noqa: E402


def _stored(cluster, topic: str) -> dict[str, int]:
    """Messages each broker holds for the topic (sum of its queues' max offsets)."""
    out = {}
    for name, b in cluster.brokers.items():
        if b.proc is None:
            continue
        conn = Conn(b.endpoint)
        try:
            out[name] = sum(q.max_offset for q in conn.describe_topic(topic, local=True).queues)
        finally:
            conn.close()
    return out


def test_client_pointed_at_one_broker_produces_and_consumes_across_all(cluster):
    cluster.brokers["b1"].cli("topic", "create", "everywhere", "--queues", "6", check=True)
    with producer(cluster.brokers["b2"].endpoint, "everywhere") as p:
        sent = {send(p, "everywhere", f"m{i}".encode()).message_id for i in range(30)}
    stored = _stored(cluster, "everywhere")
    assert sum(stored.values()) == 30 and all(n > 0 for n in stored.values()), stored
    with simple_consumer(cluster.brokers["b3"].endpoint, "everywhere-g", {"everywhere": "*"}) as c:
        got = receive_until(c, lambda g: len({m.message_id for m in g}) >= 30, timeout=20)
        for m in got:
            c.ack(m)
    assert {m.message_id for m in got} == sent


def test_sends_keep_succeeding_when_a_broker_dies(cluster):
    cluster.brokers["b1"].cli("topic", "create", "survive", "--queues", "6", check=True)
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with producer(cluster.brokers["b1"].endpoint, "survive") as p:
            i = 0
            while not stop.is_set():
                try:
                    acked.append(send(p, "survive", f"x{i}".encode()).message_id)
                except Exception as e:  # noqa: BLE001 - counted, the test judges the rate
                    failed.append(repr(e))
                i += 1

    t = threading.Thread(target=produce)
    t.start()
    try:
        wait_for(lambda: len(acked) >= 20, 15, what="the producer sending")
        cluster.brokers["b3"].kill()
        before = len(acked)
        time.sleep(4.0)  # past the name server's timeout: routes drop b3
        after_loss = len(acked) - before
    finally:
        stop.set()
        t.join(30)
    assert after_loss > 20, f"only {after_loss} sends succeeded after the broker died; failures: {failed[:3]}"
    assert len(failed) <= 5, f"{len(failed)} sends failed even with retries: {failed[:3]}"
    cluster.brokers["b3"].start()
    cluster.wait_for_brokers({"b1", "b2", "b3"})
    lost = set(acked) - cluster.stored_ids("survive")
    assert not lost, f"{len(lost)} acknowledged messages are gone after the broker came back"


def test_consumers_keep_consuming_the_survivors_queues(cluster):
    cluster.brokers["b1"].cli("topic", "create", "afterloss", "--queues", "6", check=True)
    cluster.brokers["b2"].kill()
    cluster.wait_for_brokers({"b1", "b3"})
    with producer(cluster.brokers["b1"].endpoint, "afterloss") as p:
        sent = {send(p, "afterloss", f"s{i}".encode()).message_id for i in range(20)}
    with simple_consumer(cluster.brokers["b3"].endpoint, "afterloss-g", {"afterloss": "*"}) as c:
        got = receive_until(c, lambda g: len({m.message_id for m in g}) >= 20, timeout=20)
        for m in got:
            c.ack(m)
    assert {m.message_id for m in got} == sent
