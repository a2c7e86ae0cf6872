"""Issue 32 §7, as an attacker runs it against a real broker with --auth: sessions and call slots
taken by a user with no grants.

A Heartbeat without a group and Telemetry settings without topics checked no ACL, and sessions
were evicted least recently heard from at `max_clients`: mallory (no grant at all) sent 25 junk
heartbeats at max_clients=20, evicted bob's consumer and took over its client id (bob's own
heartbeat then got FORBIDDEN); 60 of her Telemetry streams filled max_concurrent_rpcs=60 and the
admin's calls failed with RESOURCE_EXHAUSTED. Now a session needs a grant it can use, another
user's load never evicts a live session (a user's own go first), a user holds at most
max_streams_per_user streams, and the last slot of max_concurrent_rpcs is a super user's admin call's.
Without auth, Telemetry settings' names are validated before they are recorded.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_setup import ADMIN, SECRETS, TOPIC, grant
from broker_process import BrokerProcess
from mqwire import RPC_TIMEOUT
from telemetry_stream import TelemetryStream, producer_settings

from rockmq.auth.users import Users
from rockmq.plumbing.channels import client_metadata, open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

USERS = {**SECRETS, "mallory": "mallory-secret"}  # mallory has no grant at all
GROUP, LOAD_GROUP = "slots-billing", "slots-load"  # bob consumes through GROUP; alice may load LOAD_GROUP
VICTIM = "bobs-consumer"
MAX_CLIENTS, MAX_CALLS, MAX_STREAMS = 20, 60, 40


def _as(user: str, client_id: str) -> tuple[tuple[str, str], ...]:
    return (*client_metadata(client_id), *Credentials(user, USERS[user]).headers())


def _start(data: Path, **settings: float) -> BrokerProcess:
    """A broker with --auth, USERS and their grants, and these settings (as ROCKMQ_* variables:
    a broker from before them starts too, and the attack runs)."""
    users = Users(data)
    for name, secret in USERS.items():
        users.create(name, secret, super_user=name == ADMIN)
    b = BrokerProcess(data, "--auth", env={f"ROCKMQ_{k.upper()}": str(v) for k, v in settings.items()}).start()
    with open_channel(b.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC), metadata=_as(ADMIN, "setup"),
                                             timeout=RPC_TIMEOUT)
        grant(ch, "alice", f"Topic:{TOPIC}", "Pub")
        grant(ch, "alice", f"Group:{LOAD_GROUP}", "Sub")
        grant(ch, "bob", f"Group:{GROUP}", "Sub")
    return b


@pytest.fixture(scope="module")
def slots_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = _start(tmp_path_factory.mktemp("slots"), max_clients=MAX_CLIENTS, max_concurrent_rpcs=MAX_CALLS,
               max_streams_per_user=MAX_STREAMS, max_sessions_per_user=100)
    yield b
    b.stop()


@pytest.fixture
def stub(slots_broker: BrokerProcess) -> Iterator[svc.MessagingServiceStub]:
    with open_channel(slots_broker.endpoint) as ch:
        yield svc.MessagingServiceStub(ch)


def _heartbeat(stub: svc.MessagingServiceStub, user: str, client_id: str, group: str = "") -> pb.Status:
    request = rpc.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER)
    if group:
        request.group.name = group
    reply = stub.Heartbeat(request, metadata=_as(user, client_id), timeout=RPC_TIMEOUT)
    return reply.status


def _members(broker: BrokerProcess, group: str) -> list[str]:
    with open_channel(broker.endpoint) as ch:
        reply = admin_grpc.AdminStub(ch).ListMembers(admin.GroupRequest(name=group), metadata=_as(ADMIN, "admin"),
                                                     timeout=RPC_TIMEOUT)
    return [m.client_id for m in reply.members]


def test_a_user_with_no_grants_makes_no_session(slots_broker, stub):
    assert _heartbeat(stub, "bob", VICTIM, GROUP).code == pb.OK
    for i in range(MAX_CLIENTS + 5):  # junk heartbeats: no group, no grant
        junk = _heartbeat(stub, "mallory", f"junk-{i}")
        assert junk.code == pb.FORBIDDEN and "a session needs" in junk.message, junk
    stolen = _heartbeat(stub, "mallory", VICTIM)
    assert stolen.code == pb.FORBIDDEN and "another user's" in stolen.message, stolen
    assert _members(slots_broker, GROUP) == [VICTIM]  # never evicted
    assert _heartbeat(stub, "bob", VICTIM, GROUP).code == pb.OK  # still bob's
    settings = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing())  # names no topic
    with contextlib.closing(TelemetryStream(stub, _as("mallory", "junk-telemetry"), settings)) as telemetry:
        reply = telemetry.next(RPC_TIMEOUT)
    assert reply is not None and reply.status.code == pb.FORBIDDEN and "a session needs" in reply.status.message, reply


def test_another_users_load_evicts_its_own_sessions_first(slots_broker, stub):
    """alice may open sessions (Sub on LOAD_GROUP): past max_clients hers go, never bob's live one."""
    assert _heartbeat(stub, "bob", VICTIM, GROUP).code == pb.OK
    for i in range(MAX_CLIENTS + 5):
        assert _heartbeat(stub, "alice", f"load-{i}", LOAD_GROUP).code == pb.OK
    assert _members(slots_broker, GROUP) == [VICTIM]
    assert len(_members(slots_broker, LOAD_GROUP)) == MAX_CLIENTS - 1  # all of the table but bob's one


def test_a_users_share_and_a_table_full_of_live_sessions(tmp_path):
    """At max_sessions_per_user a user's own silent longest goes; a table full of other users' live
    sessions refuses a new one (TOO_MANY_REQUESTS), and takes it once one of them is silent for long."""
    b = _start(tmp_path, max_clients=6, max_sessions_per_user=3, client_silence_s=1)
    try:
        with open_channel(b.endpoint) as ch:
            stub = svc.MessagingServiceStub(ch)
            for i in range(4):
                assert _heartbeat(stub, "alice", f"a-{i}", LOAD_GROUP).code == pb.OK
            assert _members(b, LOAD_GROUP) == ["a-1", "a-2", "a-3"]
            for i in range(3):
                assert _heartbeat(stub, "bob", f"b-{i}", GROUP).code == pb.OK
            full = _heartbeat(stub, "admin", "admins-consumer", GROUP)
            assert full.code == pb.TOO_MANY_REQUESTS and "max_clients (6) reached" in full.message, full
            time.sleep(1.2)  # every session silent past client_silence_s: its client is gone
            assert _heartbeat(stub, "admin", "admins-consumer", GROUP).code == pb.OK
            assert "a session needs" in _heartbeat(stub, "mallory", "a-1").message  # the silent longest went
            assert "another user's" in _heartbeat(stub, "mallory", "a-2").message  # still alice's
    finally:
        b.stop()


def _open(stub: svc.MessagingServiceStub, user: str, count: int,
          streams: list[TelemetryStream]) -> list[pb.Status]:
    """`count` more Telemetry streams of `user` (added to `streams`) -> the status each first answered."""
    answers = []
    for i in range(count):
        stream = TelemetryStream(stub, _as(user, f"{user}-stream-{i}"), producer_settings(TOPIC))
        streams.append(stream)
        reply = stream.next(RPC_TIMEOUT)
        assert reply is not None, f"{user}'s stream {i} got no answer"
        answers.append(reply.status)
    return answers


def _admin_lists_topics(broker: BrokerProcess) -> list[str]:
    with open_channel(broker.endpoint) as ch:
        reply = admin_grpc.AdminStub(ch).ListTopics(admin.ListTopicsRequest(), metadata=_as(ADMIN, "admin"),
                                                    timeout=RPC_TIMEOUT)
    return [t.name for t in reply.topics]


def test_one_users_streams_leave_the_last_slot_to_super_users_admin_calls(slots_broker, stub):
    streams: list[TelemetryStream] = []
    try:
        mallorys = _open(stub, "mallory", MAX_CALLS, streams)
        assert TOPIC in _admin_lists_topics(slots_broker)  # it was RESOURCE_EXHAUSTED
        assert {st.code for st in mallorys[:MAX_STREAMS]} == {pb.FORBIDDEN}  # served, but no Pub on TOPIC
        over_cap = mallorys[MAX_STREAMS:]
        assert {st.code for st in over_cap} == {pb.TOO_MANY_REQUESTS}, over_cap[0]
        assert "max_streams_per_user" in over_cap[0].message, over_cap[0]
        alices = _open(stub, "alice", MAX_CALLS - MAX_STREAMS, streams)  # her last would take the admin's slot
        assert {st.code for st in alices[:-1]} == {pb.OK}, alices
        assert alices[-1].code == pb.TOO_MANY_REQUESTS, alices[-1]
        assert "kept for super users' admin calls" in alices[-1].message, alices[-1]
        route = stub.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name=TOPIC)), metadata=_as("alice", "alice"),
                                timeout=RPC_TIMEOUT)
        assert route.status.code == pb.TOO_MANY_REQUESTS, route.status  # no super user: not hers either
        assert TOPIC in _admin_lists_topics(slots_broker)  # the slot kept for it
    finally:
        for s in streams:
            s.close()


@pytest.mark.parametrize("settings, refused", [
    (pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="x" * 5000)])),
     pb.ILLEGAL_TOPIC),
    (pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name="slots-legal"), subscriptions=[pb.SubscriptionEntry(
            topic=pb.Resource(name="t\nforged"), expression=pb.FilterExpression(type=pb.TAG, expression="*"))])),
     pb.ILLEGAL_TOPIC),
], ids=["publishing", "subscription"])
def test_without_auth_telemetry_settings_name_only_legal_names(broker, settings, refused):
    """The names are validated before any is recorded (the session's topics, the group's members)."""
    with open_channel(broker.endpoint) as ch, contextlib.closing(
            TelemetryStream(svc.MessagingServiceStub(ch), client_metadata("illegal-names"), settings)) as telemetry:
        reply = telemetry.next(RPC_TIMEOUT)
    assert reply is not None and reply.status.code == refused, reply

