"""Name server + three brokers: routes across brokers, spreading, official clients, broker loss."""

from __future__ import annotations

import re

import pytest
from mqwire import Conn, message
from waiting import wait_for

from rockmq.protocol import pb, rpc


def _route(endpoint: str, topic: str) -> list[tuple[str, int, int]]:
    conn = Conn(endpoint)
    try:
        reply = conn.query_route(topic)
        assert reply.status.code == pb.OK, reply.status
        return [(q.broker.name, q.id, q.broker.endpoints.addresses[0].port) for q in reply.message_queues]
    finally:
        conn.close()


def _wait_route(cluster, topic: str, want, timeout: float = 10.0) -> None:
    def routes() -> dict:
        return {n: _route(b.endpoint, topic) for n, b in cluster.brokers.items() if b.proc is not None}

    wait_for(lambda: all(r == want for r in routes().values()), timeout, 0.1, what=f"every broker's route to be {want}")


def test_topic_spreads_over_brokers_and_every_broker_returns_the_same_interleaved_route(cluster):
    b1 = cluster.brokers["b1"]
    out = b1.cli("topic", "create", "orders", "--queues", "8")
    assert out.returncode == 0, out.stderr
    assert "8 queues on b1, b2, b3" in out.stdout, out.stdout
    port = {n: b.port for n, b in cluster.brokers.items()}
    want = [(n, q, port[n]) for q in range(3) for n in ("b1", "b2", "b3") if (n, q) != ("b3", 2)]
    _wait_route(cluster, "orders", want)

    out = b1.cli("topic", "create", "pairs", "--queues", "4", "--brokers", "b2,b3")
    assert out.returncode == 0 and "on b2, b3" in out.stdout, out.stdout + out.stderr
    _wait_route(cluster, "pairs", [("b2", 0, port["b2"]), ("b3", 0, port["b3"]), ("b2", 1, port["b2"]), ("b3", 1, port["b3"])])

    bad = b1.cli("topic", "create", "nowhere", "--brokers", "b9")
    assert bad.returncode == 1 and "b9" in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
    again = b1.cli("topic", "create", "orders")
    assert again.returncode == 1 and re.search("already exists", again.stderr), again.stderr


def test_a_queue_of_another_broker_is_refused_clearly(cluster):
    cluster.brokers["b1"].cli("topic", "create", "t", "--queues", "3", check=True)
    conn = Conn(cluster.brokers["b1"].endpoint)
    try:
        req = rpc.PullMessageRequest(group=pb.Resource(name="g"), offset=0, batch_size=1,
                                     message_queue=pb.MessageQueue(topic=pb.Resource(name="t"), id=0,
                                                                   broker=pb.Broker(name="b2")))
        frames = list(conn.mq.PullMessage(req, timeout=10))
        assert frames[0].status.code == pb.BAD_REQUEST and "belongs to broker 'b2'" in frames[0].status.message
    finally:
        conn.close()


def test_sends_through_one_broker_reach_all_and_a_lost_broker_leaves_the_route(cluster):
    cluster.brokers["b1"].cli("topic", "create", "spread", "--queues", "6", check=True)
    port = {n: b.port for n, b in cluster.brokers.items()}
    _wait_route(cluster, "spread", [(n, q, port[n]) for q in range(2) for n in ("b1", "b2", "b3")])
    for name, b in cluster.brokers.items():  # a client sends to the broker of the queue it picked
        conn = Conn(b.endpoint)
        try:
            conn.send_ok(*(message("spread", f"{name}-{i}") for i in range(5)))
        finally:
            conn.close()
    b3 = cluster.brokers["b3"]
    b3.kill()
    cluster.wait_for_brokers({"b1", "b2"})
    _wait_route(cluster, "spread", [(n, q, port[n]) for q in range(2) for n in ("b1", "b2")])
    b3.start()
    cluster.wait_for_brokers({"b1", "b2", "b3"})
    _wait_route(cluster, "spread", [(n, q, port[n]) for q in range(2) for n in ("b1", "b2", "b3")])
    conn = Conn(b3.endpoint)
    try:  # what b3 acknowledged before the kill is still there
        bodies = sorted(m.body.decode() for q in range(2) for m in conn.pull_all("spread", q))
        assert bodies == sorted(f"b3-{i}" for i in range(5))
    finally:
        conn.close()


def test_describe_aggregates_every_broker(cluster):
    b1 = cluster.brokers["b1"]
    b1.cli("topic", "create", "agg", "--queues", "6", check=True)
    for name, b in cluster.brokers.items():
        conn = Conn(b.endpoint)
        try:
            conn.send_ok(*(message("agg", f"{name}-{i}") for i in range(4)))
            got = conn.receive_n("agg-g", "agg", 4, within=5)  # the group consumes on every broker
            conn.ack("agg-g", "agg", *got[:3])  # one left in flight on each
        finally:
            conn.close()
    out = cluster.brokers["b2"].cli("topic", "describe", "agg")
    assert out.returncode == 0 and out.stdout.startswith("topic agg: 6 queues"), out.stdout + out.stderr
    rows = [ln.split() for ln in out.stdout.splitlines()[2:]]
    assert sorted((r[0], r[1]) for r in rows) == [(n, str(q)) for n in ("b1", "b2", "b3") for q in range(2)]
    assert sum(int(r[3]) for r in rows) == 12
    out = cluster.brokers["b3"].cli("group", "describe", "agg-g")
    assert out.returncode == 0 and "3 in flight" in out.stdout.splitlines()[0], out.stdout + out.stderr
    assert {ln.split()[1] for ln in out.stdout.splitlines()[2:]} == {"b1", "b2", "b3"}


def test_describe_names_a_broker_that_does_not_answer_and_the_spark_planner_skips_it(lingering_cluster):
    """A broker killed a moment ago is still registered: describe shows the others and names it,
    a stream's planner reads the others' queues, a batch read refuses to plan without it."""
    from rockmq.spark.fetch import Brokers, SourceError

    c = lingering_cluster
    b1 = c.brokers["b1"]
    b1.cli("topic", "create", "down", "--queues", "6", check=True)
    c.brokers["b3"].kill()
    out = b1.cli("topic", "describe", "down")
    assert out.returncode == 0, out.stderr
    assert {ln.split()[0] for ln in out.stdout.splitlines()[2:]} == {"b1", "b2"}
    assert out.stderr.strip() == "warning: not shown, did not answer: b3"
    out = b1.cli("group", "describe", "nobody")  # known nowhere that answers
    assert out.returncode == 3 and out.stderr.strip() == (
        "rockmq: brokers did not answer: b3; no broker that answered has group 'nobody'"), out.stderr
    planner = Brokers(b1.endpoint, 10)
    assert {(q.broker, q.queue_id) for q in planner.queues("down")} == {(b, q) for b in ("b1", "b2") for q in range(2)}
    with pytest.raises(SourceError, match="b3"):
        planner.queues("down", strict=True)
