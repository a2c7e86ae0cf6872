"""`rockmq client list` against a real broker: the official client's producer and consumer, and
a client on the wire, each with the language, version and address the broker recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mqwire import RPC_TIMEOUT
from telemetry_stream import TelemetryStream, producer_settings
from test_cli import assert_one_line_error, ok, table
from waiting import wait_for

from rockmq.plumbing.channels import client_metadata
from rockmq.protocol import admin, pb, rpc

sys.path.insert(0, str(Path(__file__).parents[1] / "compat"))
from official_client import producer, simple_consumer  # noqa: E402


def clients(broker, *args: str) -> dict[str, dict]:
    return {c["client_id"]: c for c in json.loads(ok(broker.cli("client", "list", "--json", *args)))["clients"]}


def test_official_clients_are_listed_with_language_version_and_address(broker, conn, unique):
    topic, group = unique("cl-topic"), unique("cl-group")
    conn.create_topic(topic)
    with producer(broker.endpoint, topic), simple_consumer(broker.endpoint, group, {topic: "*"}):
        def both() -> dict[str, dict] | None:
            listed = [c for c in clients(broker, "--topic", topic).values()]
            return listed if {c["kind"] for c in listed} == {"producer", "simple-consumer"} else None

        listed = wait_for(both, timeout=10, what="the official producer and consumer listed")
        for c in listed:
            assert c["language"] == "PYTHON" and c["version"] and c["address"].startswith("127.0.0.1:")
            assert c["broker"]
        consumer = next(c for c in listed if c["kind"] == "simple-consumer")
        assert consumer["group"] == group and consumer["topics"] == [topic]
        assert list(clients(broker, "--group", group)) == [consumer["client_id"]]
        rows = table(ok(broker.cli("client", "list", "--group", group)), "CLIENT_ID")
        assert [r[:3] for r in rows] == [[consumer["client_id"], "simple-consumer", group]]


def test_ua_of_the_settings_is_recorded(broker, conn, unique):
    topic, client_id = unique("cl-ua"), unique("java-client")
    conn.create_topic(topic)
    settings = producer_settings(topic)
    settings.user_agent.language = pb.JAVA
    settings.user_agent.version = "5.0.7"
    stream = TelemetryStream(conn.mq, client_metadata(client_id), settings)
    try:
        assert stream.next(RPC_TIMEOUT, "settings") is not None
        listed = clients(broker, "--topic", topic)[client_id]
        assert (listed["kind"], listed["language"], listed["version"]) == ("producer", "JAVA", "5.0.7")
    finally:
        stream.close()


def test_bad_input_is_one_line(broker, unique):
    assert_one_line_error(broker.cli("client", "list", "--group", unique("nope")), 1, "does not exist")
    assert_one_line_error(broker.cli("client", "list", "--topic", unique("nope")), 1, "does not exist")
    assert_one_line_error(broker.cli("client", "list", "--group", "g", "--topic", "t"), 2, "not allowed")


def test_a_language_this_broker_does_not_know_is_listed_by_number(broker, conn, unique):
    """A newer client's language (an enum value past those compiled in) does not break its settings."""
    topic, client_id = unique("cl-lang"), unique("future-client")
    conn.create_topic(topic)
    settings = producer_settings(topic)
    settings.user_agent.language = 99  # proto3 enums are open: the value arrives as a number
    settings.user_agent.version = "9.9.9"
    stream = TelemetryStream(conn.mq, client_metadata(client_id), settings)
    try:
        assert stream.next(RPC_TIMEOUT, "settings") is not None
        assert clients(broker, "--topic", topic)[client_id]["language"] == "99"
    finally:
        stream.close()


@pytest.mark.broker_settings(max_list_page=2)
def test_a_listing_holds_at_most_max_list_page_clients(harness):
    """Clients connect by the thousand: one reply holds a page of them and says more are connected."""
    for i in range(3):
        harness.conn.mq.Heartbeat(rpc.HeartbeatRequest(client_type=pb.PRODUCER), timeout=RPC_TIMEOUT,
                                  metadata=client_metadata(f"many-{i}"))
    reply = harness.conn.admin.ListClients(admin.ListClientsRequest(), timeout=RPC_TIMEOUT)
    assert len(reply.clients) == 2 and reply.more
