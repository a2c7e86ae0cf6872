"""Dead letters and offsets across a cluster: one broker's `rockmq dlq` and `group reset` act on
every broker's share of the group."""

from __future__ import annotations

import json

import pytest
from conftest import start_cluster
from dead_letters import dead_letters, make_dead_letters
from mqwire import META, RPC_TIMEOUT, Conn
from shard_set import ShardSet
from waiting import wait_for

from rockmq.protocol import pb, rpc


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    return result.stdout


@pytest.fixture
def pair(tmp_path):
    cluster = start_cluster(tmp_path, ("b1", "b2"))
    conns = {name: Conn(b.endpoint) for name, b in cluster.brokers.items()}
    yield cluster, conns
    for c in conns.values():
        c.close()
    for b in cluster.brokers.values():
        b.kill()
    cluster.namesrv.kill()


def test_dlq_and_reset_over_two_brokers(pair):
    cluster, conns = pair
    b1, b2 = cluster.brokers["b1"], cluster.brokers["b2"]
    ok(b1.cli("topic", "create", "orders", "--queues", "2", "--brokers", "b1,b2"))
    ok(b1.cli("group", "create", "billing", "--max-attempts", "2"))
    on_b1 = make_dead_letters(conns["b1"], "orders", "billing", ["one"])
    on_b2 = make_dead_letters(conns["b2"], "orders", "billing", ["two"])

    listed = json.loads(ok(b1.cli("dlq", "list", "billing", "--json")))["messages"]
    assert {(m["message_id"], m["broker"]) for m in listed} == {(on_b1[0], "b1"), (on_b2[0], "b2")}

    assert "sent back 2" in ok(b2.cli("dlq", "resend", "billing", "--all"))
    for name, sent in (("b1", on_b1), ("b2", on_b2)):
        back = conns[name].receive_n("billing", "orders", 1)
        assert [m.system_properties.message_id for m in back] == sent
        conns[name].ack("billing", "orders", *back)

    assert "purged 2 " in ok(b2.cli("dlq", "purge", "billing"))
    assert dead_letters(conns["b1"], "billing") == []

    ok(b1.cli("group", "reset", "billing", "--topic", "orders", "--to", "earliest"))
    queues = conns["b2"].describe_group("billing").queues
    assert {(q.broker, q.pop_offset, q.lag) for q in queues if q.topic == "orders"} == {("b1", 0, 1), ("b2", 0, 1)}
    for name, sent in (("b1", on_b1), ("b2", on_b2)):
        again = wait_for(lambda c=conns[name]: c.receive_n("billing", "orders", 1, within=1), timeout=10)
        assert [m.system_properties.message_id for m in again] == sent


def test_workers_answer_for_every_shard(tmp_path):
    """`--workers 2`: the one --port lists, resends and resets over both shards, and lists clients of both."""
    shards = ShardSet(tmp_path / "data", 2).start()
    try:
        ok(shards.cli("topic", "create", "jobs", "--queues", "2"))
        ok(shards.cli("group", "create", "runners", "--max-attempts", "2"))
        route = shards.shards("jobs")
        names = sorted(route)
        conns = [Conn(route[name]) for name in names]
        try:
            sent = [make_dead_letters(c, "jobs", "runners", [f"job-{i}"])[0] for i, c in enumerate(conns)]
            listed = json.loads(ok(shards.cli("dlq", "list", "runners", "--json")))["messages"]
            assert {(m["message_id"], m["broker"]) for m in listed} == set(zip(sent, names, strict=True))
            assert "sent back 2" in ok(shards.cli("dlq", "resend", "runners", "--all"))
            ok(shards.cli("group", "reset", "runners", "--topic", "jobs", "--to", "latest"))
            for c in conns:  # the resent letters went with the reset's dropped retries
                assert c.receive("runners", "jobs", poll_s=0.2)[1] == []
            for c in conns:
                c.mq.Heartbeat(rpc.HeartbeatRequest(group=pb.Resource(name="runners"), client_type=pb.SIMPLE_CONSUMER),
                               metadata=META, timeout=RPC_TIMEOUT)
            listed = json.loads(ok(shards.cli("client", "list", "--group", "runners", "--json")))["clients"]
            assert {c["broker"] for c in listed} == set(route)  # one test client id, seen by each shard
        finally:
            for c in conns:
                c.close()
    finally:
        shards.kill()


def test_delete_refused_when_a_consumer_is_on_another_broker(pair):
    cluster, conns = pair
    b1 = cluster.brokers["b1"]
    ok(b1.cli("group", "create", "audit"))
    conns["b2"].mq.Heartbeat(rpc.HeartbeatRequest(group=pb.Resource(name="audit"), client_type=pb.SIMPLE_CONSUMER),
                             metadata=META, timeout=RPC_TIMEOUT)
    refused = b1.cli("group", "delete", "audit")
    assert refused.returncode == 1 and "connected consumers" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert all("audit" in c.group_names() for c in conns.values())  # no broker deleted it
    ok(b1.cli("group", "delete", "audit", "--force"))
    assert not any("audit" in c.group_names() for c in conns.values())
