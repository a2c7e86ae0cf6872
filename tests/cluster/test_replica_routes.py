"""Every member of a replicated group routes writes to its primary (issue 33 §4): a replica answers
QueryRoute and QueryAssignment with the primary's queues at the primary's endpoint, so producers
given "replica,primary" (rockmq's client) or "replica;primary" (the official one) send every
message while the primary is healthy; and rockmq's client retries a replica's "not the primary"
refusal elsewhere (a route cached before the broker at that address became a replica)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT, Conn, held_ids, message
from tls_certs import free_port
from waiting import wait_for

from rockmq.client import AsyncProducer, AsyncPullConsumer, Message
from rockmq.protocol import pb, rpc
from rockmq.protocol.endpoints import endpoints_of

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import producer, send  # noqa: E402

TOPIC = "routed"
QUEUES = 2


@pytest.fixture
def pair(tmp_path):
    """A primary with async replication, its replica (--replica-of HOST:PORT) holding the topic. The
    replica's address sorts first: the official client dials "replica;primary" as one channel to
    the sorted addresses, the first that answers taking every call."""
    first, second = sorted({free_port() for _ in range(8)}, key=lambda port: f"127.0.0.1:{port}")[:2]
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1")
    primary.port = second
    primary.start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1")
    replica.port = first
    try:
        replica.start()
        conn = Conn(primary.endpoint)
        try:
            conn.create_topic(TOPIC, queues=QUEUES)
        finally:
            conn.close()
        _wait_holds_topic(replica)
        yield primary, replica
    finally:
        replica.kill()
        primary.kill()


def _wait_holds_topic(replica: BrokerProcess) -> None:
    conn = Conn(replica.endpoint)

    def holds() -> bool:
        try:
            return TOPIC in conn.topic_names()
        except grpc.RpcError:
            return False

    try:
        wait_for(holds, 15, what="the replica to hold the topic")
    finally:
        conn.close()


def _ports(queues) -> set[int]:
    return {q.broker.endpoints.addresses[0].port for q in queues}


def test_a_replica_routes_writes_and_assignments_to_its_primary(pair):
    primary, replica = pair
    conn = Conn(replica.endpoint)
    try:
        route = conn.query_route(TOPIC)
        assert route.status.code == pb.OK, route.status
        assert len(route.message_queues) == QUEUES and _ports(route.message_queues) == {primary.port}, route
        assert all(q.permission == pb.READ_WRITE and q.broker.name == "b1" for q in route.message_queues), route
        # A group the replica never saw: assigned (nothing written here) to the primary, where POP is served.
        request = rpc.QueryAssignmentRequest(topic=pb.Resource(name=TOPIC), group=pb.Resource(name="never-seen"))
        assigned = conn.mq.QueryAssignment(request, metadata=META, timeout=RPC_TIMEOUT)
        assert assigned.status.code == pb.OK, assigned.status
        assert _ports(a.message_queue for a in assigned.assignments) == {primary.port}, assigned
        assert "never-seen" not in conn.group_names()
    finally:
        conn.close()


def test_rockmq_producer_given_the_replica_first_sends_to_the_primary(pair):
    primary, replica = pair

    async def run() -> list[str]:
        async with AsyncProducer(f"{replica.endpoint},{primary.endpoint}", request_timeout=3.0) as p:
            return [(await p.send(Message(TOPIC, f"m{i}".encode()))).message_id for i in range(20)]

    sent = asyncio.run(run())
    assert len(set(sent)) == 20
    assert set(sent) <= held_ids(primary.endpoint, TOPIC, QUEUES)


def test_official_producer_given_the_replica_first_sends_to_the_primary(pair):
    """Its route comes from the replica (the address it dials first), which names the primary; a
    route from the primary would name the primary's own endpoint, not the two given."""
    primary, replica = pair
    with producer(f"{replica.endpoint};{primary.endpoint}", TOPIC) as p:
        sent = {send(p, TOPIC, f"o{i}".encode()).message_id for i in range(10)}
    assert len(sent) == 10 and sent <= held_ids(primary.endpoint, TOPIC, QUEUES)
    conn = Conn(primary.endpoint)
    try:
        both = rpc.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=endpoints_of(replica.endpoint))
        both.endpoints.addresses.extend(endpoints_of(primary.endpoint).addresses)
        route = conn.mq.QueryRoute(both, metadata=META, timeout=RPC_TIMEOUT)
        assert [len(q.broker.endpoints.addresses) for q in route.message_queues] == [1] * QUEUES, route
        assert _ports(route.message_queues) == {primary.port}, route
    finally:
        conn.close()


def test_a_replicas_refusal_is_retried_on_the_primary(tmp_path):
    """A producer's route names b1 at an address where a replica now runs: its send is refused there
    ("not the primary"), retried after a fresh route (which the replica answers with the primary),
    and stored on the primary; with the primary down too, it goes to the spool like any send that
    failed for now."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1").start()
    former = BrokerProcess(tmp_path / "former", "--broker-name", "b1").start()  # b1 before its replacement
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1")
    try:
        for broker in (primary, former):
            conn = Conn(broker.endpoint)
            try:
                conn.create_topic(TOPIC, queues=QUEUES)
            finally:
                conn.close()

        async def run() -> None:
            kept = {"route_ttl_s": 600.0, "request_timeout": 3.0}
            async with AsyncProducer(former.endpoint, **kept) as p, \
                    AsyncProducer(former.endpoint, spool_dir=str(tmp_path / "spool"), **kept) as spooling:
                for each in (p, spooling):  # both cache a route naming b1 at the former's address
                    assert not (await each.send(Message(TOPIC, b"before"))).spooled
                await asyncio.to_thread(former.kill)
                replica.port = former.port
                await asyncio.to_thread(replica.start)
                await asyncio.to_thread(_wait_holds_topic, replica)
                receipts = [await p.send(Message(TOPIC, f"after-{i}".encode())) for i in range(5)]
                assert not any(r.spooled for r in receipts), receipts
                assert {r.message_id for r in receipts} <= await asyncio.to_thread(held_ids, primary.endpoint, TOPIC, QUEUES)
                await asyncio.to_thread(primary.kill)
                assert (await spooling.send(Message(TOPIC, b"while the primary is down"))).spooled

        asyncio.run(run())
    finally:
        replica.kill()
        former.kill()
        primary.kill()


def test_with_its_primary_gone_a_replica_routes_readers_to_itself(pair):
    """The primary dead, the replica is what there is to read: its route lists its own queues for
    reading only (READ: producers take no send there), and rockmq's pull consumer given only the
    replica reads every message the primary acknowledged."""
    primary, replica = pair
    conn = Conn(primary.endpoint)
    try:
        sent = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(10)))}
    finally:
        conn.close()
    wait_for(lambda: sent <= held_ids(replica.endpoint, TOPIC, QUEUES), 15, what="the replica to hold the messages")
    primary.kill()
    rconn = Conn(replica.endpoint)

    def reads_here():
        route = rconn.query_route(TOPIC)
        return route if _ports(route.message_queues) == {replica.port} else None

    try:
        route = wait_for(reads_here, 10, what="the replica to route readers to itself")
        assert {q.permission for q in route.message_queues} == {pb.READ}, route
    finally:
        rconn.close()

    async def pull_everything() -> set[str]:
        async with AsyncPullConsumer(replica.endpoint, "readers") as c:
            return {m.message_id for q in await c.queues(TOPIC) for m in (await c.pull(q, 0)).messages}

    assert asyncio.run(pull_everything()) == sent
    primary.start()  # back: writers are routed to it again
    rconn = Conn(replica.endpoint)
    try:
        wait_for(lambda: _ports(rconn.query_route(TOPIC).message_queues) == {primary.port}, 15,
                 what="the replica to route to its primary again")
    finally:
        rconn.close()
