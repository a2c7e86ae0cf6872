"""/metrics after real traffic (issue 28 §1): counts in and out, lag as ready + in flight in messages
and in time, a dead-letter move, transactions ended, every value read back through prometheus-client's
parser. Gauges are cached for a few seconds: a test waits for the value it expects."""

from __future__ import annotations

import asyncio

import pytest
from broker_process import BrokerProcess
from mqwire import Conn, message
from scrape import samples, value
from tls_certs import free_port
from waiting import wait_for

from rockmq.broker import metrics as broker_metrics
from rockmq.client import AsyncProducer, Message, Producer, SimpleConsumer
from rockmq.plumbing.channels import client_metadata
from rockmq.protocol import pb, rpc

BODY = b"x" * 100


@pytest.fixture(scope="module")
def metered(tmp_path_factory: pytest.TempPathFactory):
    """A broker with its HTTP port; one delivery per message before the dead-letter queue."""
    http = free_port()
    b = BrokerProcess(tmp_path_factory.mktemp("metered"), "--http-port", str(http), "--max-attempts", "1").start()
    b.metrics_url = f"http://127.0.0.1:{http}/metrics"
    yield b
    b.stop()


def _until(broker: BrokerProcess, name: str, expected: float, **labels: str) -> None:
    wait_for(lambda: value(samples(broker.metrics_url), name, **labels) == expected, 15,
             what=f"{name}{labels} == {expected} (last: {value(samples(broker.metrics_url), name, **labels)})")


def test_sends_receives_acks_lag_and_in_flight(metered, unique):
    topic, group = unique("met"), unique("met-g")
    with Producer(metered.endpoint, timeout=10) as p:
        for _ in range(10):
            p.send(Message(topic, BODY))
    got = []
    with SimpleConsumer(metered.endpoint, group, {topic: "*"}, timeout=15, await_s=1) as c:
        while len(got) < 4:
            got += c.receive(4 - len(got), invisible_s=120)
        for m in got[:2]:
            c.ack(m)
    scraped = samples(metered.metrics_url)
    assert value(scraped, "rocketmq_messages_in_total", topic=topic, message_type="normal", is_system="false") == 10
    assert value(scraped, "rocketmq_throughput_in_total", topic=topic) == 10 * len(BODY)
    assert value(scraped, "rocketmq_messages_out_total", topic=topic, consumer_group=group, is_retry="false") == 4
    assert value(scraped, "rocketmq_throughput_out_total", topic=topic, consumer_group=group) > 4 * len(BODY)
    assert value(scraped, "rocketmq_message_size_bucket", le="1024.0") >= 10
    sends = {"request_code": "MessagingService/SendMessage", "response_code": "OK"}
    assert value(scraped, "rocketmq_rpc_latency_count", **sends) >= 10
    assert value(scraped, "rocketmq_rpc_latency_bucket", le="+Inf", **sends) == value(
        scraped, "rocketmq_rpc_latency_count", **sends)
    labels = {"topic": topic, "consumer_group": group}
    _until(metered, "rocketmq_consumer_inflight_messages", 2, **labels)
    scraped = samples(metered.metrics_url)
    assert value(scraped, "rocketmq_consumer_ready_messages", **labels) == 6
    assert value(scraped, "rocketmq_consumer_lag_messages", **labels) == 8  # ready + in flight
    assert value(scraped, "rocketmq_consumer_lag_latency", **labels) > 0  # ms since the oldest unacknowledged was stored
    described = metered.cli("group", "describe", group)
    assert described.returncode == 0 and "LAG_TIME" in described.stdout, described.stderr


def test_a_dead_letter_move_is_counted(metered, unique):
    topic, group = unique("met-dlq"), unique("met-dlq-g")
    with Producer(metered.endpoint, timeout=10) as p:
        p.send(Message(topic, BODY))
    with SimpleConsumer(metered.endpoint, group, {topic: "*"}, timeout=15, await_s=1) as c:
        wait_for(lambda: c.receive(1, invisible_s=1), 10, what="the message")  # never acknowledged: max attempts 1
    _until(metered, "rocketmq_send_to_dlq_messages_total", 1, topic=topic, consumer_group=group)
    assert value(samples(metered.metrics_url), "rocketmq_messages_in_total", topic=f"%DLQ%{group}") is None  # a copy


def test_transactions_ended_are_counted(metered, unique):
    topic = unique("met-txn")

    async def scenario() -> None:
        async with AsyncProducer(metered.endpoint) as p:
            kept = await p.send_transactional(Message(topic, BODY))
            dropped = await p.send_transactional(Message(topic, BODY))
            await kept.commit()
            await dropped.rollback()

    asyncio.run(scenario())
    scraped = samples(metered.metrics_url)
    assert value(scraped, "rocketmq_commit_messages_total", topic=topic) == 1
    assert value(scraped, "rocketmq_rollback_messages_total", topic=topic) == 1
    assert value(scraped, "rocketmq_messages_in_total", topic=topic, message_type="transaction") == 2


def test_pulls_count_for_groups_that_exist_only(tmp_path, unique):
    """Without auto-created groups a pull may name any group: only one that exists gets series."""
    http = free_port()
    b = BrokerProcess(tmp_path / "data", "--http-port", str(http), env={"ROCKMQ_AUTO_CREATE_GROUPS": "0"}).start()
    topic, group = unique("met-pull"), unique("met-pull-g")
    conn = Conn(b.endpoint)
    try:
        conn.create_topic(topic, queues=1)
        conn.send_ok(*(message(topic, f"m{i}") for i in range(3)))
        for made_up in range(5):  # a name made up per pull: no series each
            code, got, _ = conn.pull(f"{group}-{made_up}", topic, 0, 0)
            assert code == pb.OK and len(got) == 3
        b.cli("group", "create", group, check=True)
        assert conn.pull(group, topic, 0, 0)[0] == pb.OK
        scraped = samples(f"http://127.0.0.1:{http}/metrics")
    finally:
        conn.close()
        b.stop()
    out = {s.labels["consumer_group"]: s.value for s in scraped
           if s.name == "rocketmq_messages_out_total" and s.labels["topic"] == topic}
    assert out == {group: 3}


def test_connections_by_version_are_capped(harness, monkeypatch):
    """Clients name their own version: a client per made-up version adds no series past the cap."""
    monkeypatch.setattr(broker_metrics, "MAX_SERIES", 3)
    for i in range(5):
        harness.conn.mq.Heartbeat(rpc.HeartbeatRequest(client_type=pb.PRODUCER), timeout=10,
                                  metadata=client_metadata(f"made-up-{i}", version=f"0.0.{i}"))
    metrics = harness.services.metrics
    harness.run(metrics.refresh())
    families = {f.name: f for f in harness.call(lambda: list(metrics.collect()))}
    assert len(families["rocketmq_producer_connections"].samples) == 3
    assert families["rockmq_metrics_series_dropped"].samples[0].value == 2
