"""ACL 2.0 evaluation rules (rockmq.auth.acl), the request table (auth.permissions), the decision
cache (auth.authorizer) and the ACL file (auth.acl_store)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rockmq.auth import permissions
from rockmq.auth.acl import (
    AclError,
    Action,
    Check,
    Decision,
    Entry,
    Kind,
    Resource,
    allowed,
    group_check,
    parse_actions,
    parse_networks,
    topic_check,
)
from rockmq.auth.acl_store import AclStore, AclStoreError
from rockmq.auth.authorizer import Authorizer
from rockmq.protocol import batch, pb, rpc


def entry(resource: str, actions: str, decision: str = "Allow", ips: tuple[str, ...] = ()) -> Entry:
    return Entry(Resource.parse(resource), parse_actions(actions), parse_networks(ips), Decision(decision))


def topic(name: str, *actions: Action) -> Check:
    return topic_check(name, *(actions or (Action.PUB,)))


PUB, SUB = Action.PUB, Action.SUB

# (entries, check, source ip, super user, allowed?)
CASES = [
    pytest.param([], topic("orders"), None, False, False, id="no entries: deny"),
    pytest.param([], topic("orders"), None, True, True, id="super user passes"),
    pytest.param([entry("Topic:orders", "Pub")], topic("orders"), None, False, True, id="literal allow"),
    pytest.param([entry("Topic:orders", "Pub")], topic("orders2"), None, False, False, id="literal is not a prefix"),
    pytest.param([entry("Topic:orders", "Pub")], topic("orders", SUB), None, False, False, id="other action: deny"),
    pytest.param([entry("Topic:orders", "All")], topic("orders", Action.DELETE), None, False, True, id="All covers any"),
    pytest.param([entry("Topic:order-*", "Pub")], topic("order-eu"), None, False, True, id="prefix allow"),
    pytest.param([entry("Topic:order-*", "Pub")], topic("orders"), None, False, False, id="prefix does not match"),
    pytest.param([entry("*", "Pub")], topic("anything"), None, False, True, id="* matches any topic"),
    pytest.param([entry("*", "Sub")], group_check("billing", SUB), None, False, True, id="* matches any group"),
    pytest.param([entry("Topic:*", "Sub")], group_check("billing", SUB), None, False, False, id="Topic:* is no group"),
    pytest.param([entry("Group:billing", "Sub")], topic("billing", SUB), None, False, False, id="a group is no topic"),
    pytest.param([entry("*", "Pub", "Deny"), entry("Topic:orders", "Pub")], topic("orders"), None, False, True,
                 id="literal beats *"),
    pytest.param([entry("*", "Pub"), entry("Topic:*", "Pub", "Deny")], topic("orders"), None, False, False,
                 id="Topic:* beats *"),
    pytest.param([entry("Topic:order-*", "Pub", "Deny"), entry("Topic:orders", "Pub")], topic("orders"), None, False,
                 True, id="literal beats prefix"),
    pytest.param([entry("Topic:o*", "Pub"), entry("Topic:order-*", "Pub", "Deny")], topic("order-eu"), None, False,
                 False, id="longer prefix beats shorter (deny)"),
    pytest.param([entry("Topic:o*", "Pub", "Deny"), entry("Topic:order-*", "Pub")], topic("order-eu"), None, False,
                 True, id="longer prefix beats shorter (allow)"),
    pytest.param([entry("Topic:orders", "Pub"), entry("Topic:orders", "Pub,Sub", "Deny")], topic("orders"), None,
                 False, False, id="deny wins a tie"),
    pytest.param([entry("Topic:orders", "Sub", "Deny"), entry("Topic:orders", "Pub")], topic("orders"), None, False,
                 True, id="a deny of another action does not match"),
    pytest.param([entry("Topic:orders", "Pub", ips=("10.0.0.0/8",))], topic("orders"), "10.1.2.3", False, True,
                 id="source ip in CIDR"),
    pytest.param([entry("Topic:orders", "Pub", ips=("10.0.0.0/8",))], topic("orders"), "127.0.0.1", False, False,
                 id="source ip outside CIDR"),
    pytest.param([entry("Topic:orders", "Pub", ips=("10.0.0.0/8",))], topic("orders"), None, False, False,
                 id="unknown source ip: restricted entries do not match"),
    pytest.param([entry("Topic:orders", "Pub", ips=("::1",))], topic("orders"), "::1", False, True, id="ipv6"),
    pytest.param([entry("Topic:orders", "Pub"), entry("Topic:orders", "Pub", "Deny", ("127.0.0.0/8",))],
                 topic("orders"), "127.0.0.1", False, False, id="deny from a network wins the tie there"),
    pytest.param([entry("Topic:orders", "Pub"), entry("Topic:orders", "Pub", "Deny", ("127.0.0.0/8",))],
                 topic("orders"), "10.0.0.1", False, True, id="... and not elsewhere"),
    pytest.param([entry("Group:billing", "Sub")], group_check("%RETRY%billing", SUB), None, False, True,
                 id="%RETRY% stripped"),
    pytest.param([entry("Group:billing", "Sub")], group_check("%DLQ%billing", SUB), None, False, True,
                 id="%DLQ% stripped"),
    pytest.param([entry("Group:billing", "Sub")], topic("%RETRY%billing", SUB), None, False, True,
                 id="a retry topic is its group's"),
    pytest.param([entry("Group:billing", "Sub")], topic("%RETRY%billing"), None, False, True,
                 id="a send-back to a retry topic needs Sub on its group"),
    pytest.param([entry("Group:billing", "Sub,Pub")], topic("%DLQ%billing", SUB), None, False, False,
                 id="a dead-letter topic is not its group's"),
    pytest.param([entry("Topic:%DLQ%billing", "Sub")], topic("%DLQ%billing", SUB), None, False, True,
                 id="a dead-letter topic is granted as a topic"),
    pytest.param([entry("Topic:orders", "Pub,Sub")], topic("orders", Action.LIST), None, False, False,
                 id="List needs List"),
    pytest.param([entry("Topic:orders", "Pub")], topic_check("orders", PUB, SUB), None, False, True,
                 id="Pub or Sub: Pub is enough"),
]


@pytest.mark.parametrize("entries, check, ip, super_user, expected", CASES)
def test_evaluation(entries: list[Entry], check: Check, ip: str | None, super_user: bool, expected: bool) -> None:
    assert allowed(entries, check, ip, super_user) is expected
    assert (Authorizer({"u": tuple(entries)}).refused("u", super_user, [check], ip) is None) is expected


@pytest.mark.parametrize("text, resource", [
    ("*", Resource(Kind.ANY, "", True)),
    ("Topic:orders", Resource(Kind.TOPIC, "orders")),
    ("topic:order-*", Resource(Kind.TOPIC, "order-", True)),
    ("Group:billing", Resource(Kind.GROUP, "billing")),
    ("Topic:*", Resource(Kind.TOPIC, "", True)),
])
def test_resource_parse(text: str, resource: Resource) -> None:
    assert Resource.parse(text) == resource
    assert Resource.parse(str(resource)) == resource


@pytest.mark.parametrize("bad", ["orders", "Cluster:x", "Topic:", "Topic:a*b", "", "Topic:a b result=ok", "Group:x/y"])
def test_bad_resource(bad: str) -> None:
    with pytest.raises(AclError, match="resource"):
        Resource.parse(bad)


def test_bad_actions_and_networks() -> None:
    assert parse_actions("pub, SUB") == {PUB, SUB}
    with pytest.raises(AclError, match="unknown action 'Publish'"):
        parse_actions("Publish")
    with pytest.raises(AclError, match="no action"):
        parse_actions([])
    with pytest.raises(AclError, match="10.0.0.300"):
        parse_networks(["10.0.0.300"])


def test_cache_forgets_on_change_and_stays_bounded() -> None:
    authz = Authorizer({"u": (entry("Topic:orders", "Pub"),)}, capacity=4)
    assert authz.refused("u", False, [topic("orders")], None) is None
    authz.replace({"u": (entry("Topic:orders", "Pub", "Deny"),)})
    assert authz.refused("u", False, [topic("orders")], None) == topic("orders")
    for i in range(10):
        authz.allows("u", topic(f"t{i}"), None)
    assert len(authz._decisions) <= 4


def _method(service: str, name: str) -> str:
    return f"{service}/{name}"


def test_table_covers_every_method() -> None:
    """Every RPC of every service has its rule: nothing falls back to 'super users only' by omission."""
    from rockmq.protocol import (
        acl_grpc,
        admin_grpc,
        batch_grpc,
        messages_grpc,
        namesrv_grpc,
        replication_grpc,
        svc,
        users_grpc,
    )

    for module, service in ((svc, permissions.MESSAGING), (batch_grpc, permissions.BATCH), (admin_grpc, permissions.ADMIN),
                            (messages_grpc, permissions.MESSAGES), (acl_grpc, permissions.ACLS), (users_grpc, permissions.USERS),
                            (replication_grpc, permissions.REPLICATION), (namesrv_grpc, permissions.NAMESRV)):
        servicer = next(v for k, v in vars(module).items() if k.endswith("Servicer"))
        methods = [m for m in vars(servicer) if not m.startswith("_")]
        assert methods
        missing = [m for m in methods if _method(service, m) not in permissions.RULES]
        assert not missing, f"{service}: {missing}"


def test_reading_stored_messages_needs_sub_on_the_topic() -> None:
    from rockmq.protocol import messages

    for method, request in (("GetMessage", messages.GetMessageRequest(topic="orders", message_id="X")),
                            ("FindMessages", messages.FindMessagesRequest(topic="orders", key="k")),
                            ("ListMessages", messages.ListMessagesRequest(topic="orders")),
                            ("TraceMessage", messages.TraceMessageRequest(topic="orders", message_id="X"))):
        assert _checks(_method(permissions.MESSAGES, method), request) == {"Sub on Topic:orders"}


def _checks(method: str, request: object) -> set[str]:
    rule = permissions.RULES[method]
    assert rule.who is permissions.Who.USER and rule.checks is not None
    return {str(c) for c in rule.checks(request)}


M = permissions.MESSAGING


def test_table_v2() -> None:
    mq = pb.MessageQueue(topic=pb.Resource(name="orders"))
    g = pb.Resource(name="billing")
    assert [str(c) for c in permissions.publishing(["a", "b", "a"])] == ["Pub on Topic:a", "Pub on Topic:b"]
    assert permissions.rule(_method(M, "SendMessage")).checks is None  # asked by its handler: publishing
    assert _checks(_method(M, "QueryRoute"), rpc.QueryRouteRequest(topic=pb.Resource(name="a"))) == {"Pub|Sub on Topic:a"}
    assert _checks(_method(M, "ReceiveMessage"), rpc.ReceiveMessageRequest(group=g, message_queue=mq)) == {
        "Sub on Group:billing", "Sub on Topic:orders"}
    assert _checks(_method(M, "PullMessage"), rpc.PullMessageRequest(group=g, message_queue=mq)) == {
        "Sub on Group:billing", "Sub on Topic:orders"}
    assert _checks(_method(M, "Heartbeat"), rpc.HeartbeatRequest()) == set()
    assert _checks(_method(M, "Heartbeat"), rpc.HeartbeatRequest(group=g)) == {"Sub on Group:billing"}
    assert _checks(_method(M, "EndTransaction"), rpc.EndTransactionRequest(topic=pb.Resource(name="a"))) == {"Pub on Topic:a"}
    settings = pb.Settings(subscription=pb.Subscription(group=g, subscriptions=[
        pb.SubscriptionEntry(topic=pb.Resource(name="orders"))]))
    assert {str(c) for c in permissions.telemetry_checks(settings)} == {"Sub on Group:billing", "Sub on Topic:orders"}
    publishing = pb.Settings(publishing=pb.Publishing(topics=[pb.Resource(name="a")]))
    assert {str(c) for c in permissions.telemetry_checks(publishing)} == {"Pub on Topic:a"}


def test_table_own_services() -> None:
    B, A = permissions.BATCH, permissions.ADMIN
    assert _checks(_method(B, "Fetch"), batch.FetchRequest(topic="orders")) == {"Sub on Topic:orders"}
    assert _checks(_method(B, "Receive"), batch.ReceiveRequest(group="g", topic="t")) == {"Sub on Group:g", "Sub on Topic:t"}
    staged = batch.StageRequest(system_properties=[b""], contents=[pb.Message(topic=pb.Resource(name="out")).SerializeToString()])
    assert _checks(_method(B, "Stage"), staged) == {"Pub on Topic:out"}
    from rockmq.protocol import admin

    assert _checks(_method(A, "CreateTopic"), admin.CreateTopicRequest(name="t")) == {"Create on Topic:t"}
    assert _checks(_method(A, "DeleteTopic"), admin.TopicRequest(name="t")) == {"Delete on Topic:t"}
    assert _checks(_method(A, "DescribeGroup"), admin.GroupRequest(name="g")) == {"Get on Group:g"}
    assert _checks(_method(A, "ListTopics"), admin.ListTopicsRequest()) == {"List on Topic:*"}
    assert permissions.rule(_method(A, "Promote")).who is permissions.Who.SUPER
    assert permissions.rule(_method(permissions.ACLS, "GrantAcl")).who is permissions.Who.SUPER
    assert permissions.rule("rockmq.admin.v1.Users/CreateUser").who is permissions.Who.SUPER
    assert permissions.rule("rockmq.admin.v1.Other/New").who is permissions.Who.SUPER
    assert permissions.rule(_method(permissions.REPLICATION, "Follow")).who is permissions.Who.INNER


def test_store_round_trip_atomic_and_private(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    assert store.acls == {}
    e1 = entry("Topic:orders", "Pub,Sub", ips=("10.0.0.0/8",))
    store.grant("alice", e1)
    store.grant("alice", entry("Group:billing", "Sub"))
    store.grant("alice", entry("Topic:orders", "Pub", "Deny"))  # replaces alice's entry on Topic:orders
    assert AclStore(tmp_path).acls == {"alice": (entry("Group:billing", "Sub"), entry("Topic:orders", "Pub", "Deny"))}
    assert stat.S_IMODE(os.stat(tmp_path / "acl.json").st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["acl.json"]  # no temporary file left
    with pytest.raises(AclError, match="no entry on Topic:nope"):
        store.revoke("alice", Resource.parse("Topic:nope"))
    store.revoke("alice", Resource.parse("Group:billing"))
    store.revoke("alice", Resource.parse("Topic:orders"))
    assert AclStore(tmp_path).acls == {}
    assert json.loads((tmp_path / "acl.json").read_text())["acls"] == {}


def test_store_refuses_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / "acl.json").write_text('{"acls": {"a": [{"resource": "Nope", "actions": ["Pub"]}]}}')
    with pytest.raises(AclStoreError, match="not a valid ACL file"):
        AclStore(tmp_path)


def test_table_reads_requests_as_the_handlers_get_them() -> None:
    """Each method's checks run on what its registered deserializer gives (a message, or bytes)."""
    import grpc

    from rockmq.broker.api.batch import BatchServicer
    from rockmq.broker.api.messaging import MessagingServicer

    g, t = pb.Resource(name="billing"), pb.Resource(name="orders")
    mq = pb.MessageQueue(topic=t)
    samples = {
        "AckMessage": rpc.AckMessageRequest(group=g, topic=t, entries=[rpc.AckMessageEntry(receipt_handle="h")]),
        "ReceiveMessage": rpc.ReceiveMessageRequest(group=g, message_queue=mq),
        "PullMessage": rpc.PullMessageRequest(group=g, message_queue=mq),
        "ChangeInvisibleDuration": rpc.ChangeInvisibleDurationRequest(group=g, topic=t),
        "Receive": batch.ReceiveRequest(group="billing", topic="orders"),
        "Ack": batch.AckRequest(group="billing", topic="orders"),
    }
    handlers = [(permissions.MESSAGING, MessagingServicer(*[None] * 12).handler()),  # type: ignore[arg-type]
                (permissions.BATCH, BatchServicer(*[None] * 4).handler())]  # type: ignore[arg-type]
    checked = 0
    for service, generic in handlers:
        for method, request in samples.items():
            details = type("Details", (grpc.HandlerCallDetails,), {"method": f"/{service}/{method}",
                                                                   "invocation_metadata": ()})()
            h = generic.service(details)
            if h is None:
                continue
            got = h.request_deserializer(request.SerializeToString())
            names = {c.name for c in permissions.rule(f"{service}/{method}").checks(got)}  # type: ignore[misc]
            assert names <= {"billing", "orders"} and names, (method, names)
            checked += 1
    assert checked == len(samples)
