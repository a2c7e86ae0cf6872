"""`rockmq message send` and `message tail` in a cluster route like any client: the broker named
by --endpoint is only where they learn the routes."""

from __future__ import annotations

from mqwire import Conn, message
from waiting import wait_for


def _route_brokers(endpoint: str, topic: str) -> set[str]:
    conn = Conn(endpoint)
    try:
        return {q.broker.name for q in conn.query_route(topic).message_queues}
    finally:
        conn.close()


def _stored_bodies(endpoint: str, topic: str) -> list[bytes]:
    conn = Conn(endpoint)
    try:
        return [m.body for q in conn.describe_topic(topic, local=True).queues for m in conn.pull_all(topic, q.queue_id)]
    finally:
        conn.close()


def test_send_and_tail_through_a_broker_that_does_not_hold_the_topic(cluster):
    b1, b2, b3 = (cluster.brokers[n] for n in ("b1", "b2", "b3"))
    assert b1.cli("topic", "create", "only-b2", "--queues", "2", "--brokers", "b2").returncode == 0
    wait_for(lambda: _route_brokers(b1.endpoint, "only-b2") == {"b2"}, 10, 0.1, what="b1 to route only-b2 to b2")

    for body in ("one", "two"):
        out = b1.cli("message", "send", "only-b2", body)
        assert out.returncode == 0 and "sent " in out.stdout, out.stderr
    assert sorted(_stored_bodies(b2.endpoint, "only-b2")) == [b"one", b"two"]

    # No --timeout: it must find the messages on b2, not wait forever on b1.
    out = b1.cli("message", "tail", "only-b2", "--group", "tailers", "--count", "2", timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and {ln.rsplit(" ", 1)[1] for ln in lines} == {"one", "two"}, out.stdout
    assert all(ln.startswith("[b2:") for ln in lines), out.stdout
    described = b1.cli("group", "describe", "tailers")
    assert described.stdout.splitlines()[0].endswith(", 0 in flight"), described.stdout + described.stderr

    # A topic on two brokers: one tail through the third sees what each of them stored.
    assert b1.cli("topic", "create", "pair", "--queues", "2", "--brokers", "b1,b2").returncode == 0
    wait_for(lambda: _route_brokers(b3.endpoint, "pair") == {"b1", "b2"}, 10, 0.1, what="b3 to route pair to b1 and b2")
    for broker, body in ((b1, "on-b1"), (b2, "on-b2")):
        conn = Conn(broker.endpoint)
        try:
            conn.send_ok(message("pair", body))
        finally:
            conn.close()
    out = b3.cli("message", "tail", "pair", "--group", "tailers", "--count", "2", timeout=60)
    assert out.returncode == 0, out.stderr
    assert sorted(ln.rsplit(" ", 1)[1] for ln in out.stdout.splitlines()) == ["on-b1", "on-b2"], out.stdout
