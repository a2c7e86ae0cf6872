"""Lite topics (issue 29) with the unmodified official Python client 5.1.2: `LitePushConsumer`,
`LiteSimpleConsumer`, `Message.lite_topic`, against a real `rockmq serve` subprocess.

What the client does that these tests lean on (its source, rocketmq/v5): `subscribe_lite("sess-1")`
sends a PARTIAL_ADD of the name's characters, so prompt delivery (the first message within 5 s)
needs the broker's join rule; the subscription quota and the name length come from the Settings
reply and are checked by the client before any request; every refused send is retried by the
producer before the last status is raised as the client's exception class.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

import pytest
from acl_setup import ADMIN, SECRETS, grant, signed
from broker_process import BrokerProcess
from dead_letters import dead_letters
from mqwire import RPC_TIMEOUT, Conn
from official_client import (
    LITE,
    ConsumeResult,
    Message,
    RecordingListener,
    lite_push_consumer,
    lite_simple_consumer,
    producer,
    receive_for,
    receive_until,
    send,
    subscribe_lite,
    wait_for,
)
from rocketmq import Credentials
from rocketmq.v5.exception import (
    BadRequestException,
    ForbiddenException,
    IllegalStateException,
    LiteSubscriptionQuotaExceededException,
    LiteTopicQuotaExceededException,
)

from rockmq.auth.users import Users
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import admin, admin_grpc
from rockmq.protocol.conventions import lite_owner

ILLEGAL_LITE_TOPIC, FORBIDDEN = 40020, 40300
LITE_TOPIC_QUOTA_EXCEEDED, LITE_SUBSCRIPTION_QUOTA_EXCEEDED = 42901, 42902
FIRST_DELIVERY_S = 5  # the bound: a subscribed lite topic's first message within 5 s of its send
QUIET_S = 2.5  # how long "nothing more arrives" is watched
SUB_QUOTA, TOPIC_QUOTA = 2, 3  # the quota broker's lite_subscription_quota and max_lite_topics_per_topic


def _log(broker) -> str:
    return "\n".join(list(broker.log)[-80:])


def _lite_parent(broker, name: str) -> str:
    r = broker.cli("topic", "create", name, "--types", "LITE")
    assert r.returncode == 0, f"rockmq topic create {name} --types LITE failed:\n{r.stdout}\n{r.stderr}"
    return name


def _success() -> RecordingListener:
    return RecordingListener(lambda message, previous: ConsumeResult.SUCCESS)


def _send_all(p, parent: str, names: Iterable[str], rounds: int) -> tuple[dict[str, list[str]], float]:
    """`rounds` messages to each lite topic, interleaved; returns the ids sent per lite topic, in send
    order, and the monotonic time of the first send."""
    sent: dict[str, list[str]] = defaultdict(list)
    first = time.monotonic()
    for i in range(rounds):
        for name in names:
            sent[name].append(send(p, parent, f"{name}:{i}".encode(), lite_topic=name).message_id)
    return sent, first


def _by_lite_topic(messages: Iterable[Message]) -> dict[str, list[str]]:
    got: dict[str, list[str]] = defaultdict(list)
    for m in messages:
        got[m.lite_topic].append(m.message_id)
    return dict(got)


def _consumed(listener: RecordingListener, count: int, timeout: float, last: str | None = None) -> list[Message]:
    """Wait until `count` messages were consumed (and the one with id `last`, if given), then QUIET_S
    more (a duplicate or a stray would show); everything consumed."""
    wait_for(lambda: len(listener.messages) >= count and (last is None or bool(listener.calls_for(last))), timeout)
    time.sleep(QUIET_S)
    with listener.lock:
        return list(listener.messages)


def _assert_delivered(parent: str, got: list[Message], want: dict[str, list[str]], broker) -> None:
    """Exactly `want` (per lite topic, in send order), each once, as lite messages of `parent`."""
    assert _by_lite_topic(got) == want, (
        f"received {_by_lite_topic(got)}\nexpected {want}\n{_log(broker)}")
    for m in got:
        assert (m.topic, m.message_type, m.delivery_attempt) == (parent, LITE, 1), m


# --- LitePushConsumer ---------------------------------------------------------------------------

def test_push_consumer_gets_exactly_its_lite_topics_in_order_promptly(any_broker, unique):
    broker = any_broker
    parent, group = _lite_parent(broker, unique("py-lite")), unique("py-lite-g")
    mine, others = ["sess-a1", "sess-b2"], ["sess-c3", "sess-d4"]
    listener = _success()
    with producer(broker.endpoint, parent) as p, lite_push_consumer(broker.endpoint, group, parent, listener) as c:
        subscribe_lite(c, *mine)
        sent, first_send = _send_all(p, parent, mine + others, rounds=5)
        got = _consumed(listener, 10, timeout=30)
    assert listener.calls, f"nothing delivered to the subscribed lite topics\n{_log(broker)}"
    latency = listener.calls[0][3] - first_send
    assert latency <= FIRST_DELIVERY_S, f"first message after {latency:.1f} s (bound {FIRST_DELIVERY_S} s)"
    _assert_delivered(parent, got, {n: sent[n] for n in mine}, broker)


def test_two_consumers_of_one_group_each_get_only_their_own(any_broker, unique):
    broker = any_broker
    parent, group = _lite_parent(broker, unique("py-lite-two")), unique("py-lite-two-g")
    l1, l2 = _success(), _success()
    with producer(broker.endpoint, parent) as p, \
            lite_push_consumer(broker.endpoint, group, parent, l1) as c1, \
            lite_push_consumer(broker.endpoint, group, parent, l2) as c2:
        subscribe_lite(c1, "alpha")
        subscribe_lite(c2, "beta", "gamma")
        sent, _ = _send_all(p, parent, ["alpha", "beta", "gamma", "delta"], rounds=3)
        got2, got1 = _consumed(l2, 6, timeout=20), _consumed(l1, 3, timeout=20)
    _assert_delivered(parent, got1, {"alpha": sent["alpha"]}, broker)
    _assert_delivered(parent, got2, {"beta": sent["beta"], "gamma": sent["gamma"]}, broker)


def test_unsubscribe_lite_stops_delivery(any_broker, unique):
    broker = any_broker
    parent, group = _lite_parent(broker, unique("py-lite-unsub")), unique("py-lite-unsub-g")
    listener = _success()
    with producer(broker.endpoint, parent) as p, lite_push_consumer(broker.endpoint, group, parent, listener) as c:
        subscribe_lite(c, "keep", "drop")
        before = send(p, parent, b"drop:0", lite_topic="drop").message_id
        assert wait_for(lambda: len(listener.messages) >= 1, 20), f"nothing delivered\n{_log(broker)}"
        c.unsubscribe_lite("drop")
        after = [send(p, parent, f"drop:{i}".encode(), lite_topic="drop").message_id for i in (1, 2)]
        kept = send(p, parent, b"keep:0", lite_topic="keep").message_id
        got = _consumed(listener, 2, timeout=20, last=kept)
    ids = [m.message_id for m in got]
    assert ids.count(before) == 1 and ids.count(kept) == 1, f"received {_by_lite_topic(got)}\n{_log(broker)}"
    assert not set(after) & set(ids), f"delivered after unsubscribe_lite: {set(after) & set(ids)}"


def test_wildcard_group_gets_lite_topics_created_after_it_subscribed(broker, unique):
    parent, group = _lite_parent(broker, unique("py-lite-wild")), unique("py-lite-wild-g")
    r = broker.cli("group", "create", group, "--lite-wildcard")
    assert r.returncode == 0, f"rockmq group create {group} --lite-wildcard failed:\n{r.stdout}\n{r.stderr}"
    listener = _success()
    with producer(broker.endpoint, parent) as p, lite_push_consumer(broker.endpoint, group, parent, listener) as c:
        c.subscribe_lite_all()  # COMPLETE_ADD of an empty set: for a wildcard group, every lite topic of the parent
        sent, _ = _send_all(p, parent, ["born-later-1", "born-later-2", "born-later-3"], rounds=2)
        got = _consumed(listener, 6, timeout=20)
    _assert_delivered(parent, got, dict(sent), broker)


def test_a_message_the_listener_keeps_failing_goes_to_the_dead_letters_and_its_lite_topic_moves_on(broker, unique):
    """The FIFO push consumer retries a failing message locally up to the group's max attempts, then
    forwards it to the dead-letter topic (ForwardMessageToDeadLetterQueue with lite_topic)."""
    parent, group = _lite_parent(broker, unique("py-lite-dlq")), unique("py-lite-dlq-g")
    r = broker.cli("group", "create", group, "--max-attempts", "2")
    assert r.returncode == 0, r.stderr
    listener = RecordingListener(lambda m, previous: ConsumeResult.FAILURE if m.body == b"poison" else ConsumeResult.SUCCESS)
    with producer(broker.endpoint, parent) as p, lite_push_consumer(broker.endpoint, group, parent, listener) as c:
        subscribe_lite(c, "task-7")
        poison = send(p, parent, b"poison", lite_topic="task-7").message_id
        after = send(p, parent, b"after the poison", lite_topic="task-7").message_id
        assert wait_for(lambda: bool(listener.calls_for(after)), 30), (
            f"the message after the failing one never came: {listener.calls}\n{_log(broker)}")
    conn = Conn(broker.endpoint)
    try:
        dead = dead_letters(conn, group)
    finally:
        conn.close()
    assert [(d.message_id, d.topic) for d in dead] == [(poison, parent)], dead
    assert len(listener.calls_for(poison)) == 2 and len(listener.calls_for(after)) == 1, listener.calls


# --- LiteSimpleConsumer -------------------------------------------------------------------------

def _spread_names(broker, parent: str) -> tuple[str, str]:
    """Two lite topic names: with several brokers (`--workers 2`), the first owned by a broker the
    official LiteSimpleConsumer does not receive on (it receives on its route's first queue only:
    the relay brings it), the second by the one it does."""
    conn = Conn(broker.endpoint)
    try:
        route = conn.query_route(parent)
    finally:
        conn.close()
    first = route.message_queues[0].broker.name
    brokers = sorted({q.broker.name for q in route.message_queues})
    if len(brokers) == 1:
        return "job-1", "job-2"
    names = [f"job-{i}" for i in range(16)]
    remote = [n for n in names if lite_owner(n, brokers) != first]
    local = [n for n in names if lite_owner(n, brokers) == first]
    assert remote and local, f"names on both brokers {brokers}"
    return remote[0], local[0]


def test_simple_consumer_receive_ack_change_invisible_and_redelivery(any_broker, unique):
    """Also with `--workers 2`, with lite topics on both shards: the consumer receives on one shard, whose
    relay brings the other's (broker/cluster/lite_relay.py); its ack and invisible-time change of
    those go through it (docs/lite-topics.md "Several brokers")."""
    broker = any_broker
    parent, group = _lite_parent(broker, unique("py-lite-simple")), unique("py-lite-simple-g")
    n1, n2 = _spread_names(broker, parent)
    with producer(broker.endpoint, parent) as p, lite_simple_consumer(broker.endpoint, group, parent) as c:
        subscribe_lite(c, n1, n2)
        j1 = [send(p, parent, f"{n1}:{i}".encode(), lite_topic=n1).message_id for i in range(2)]
        j2 = send(p, parent, f"{n2}:0".encode(), lite_topic=n2).message_id

        # One at a time until n1's first is held (3 s invisible, not acked); then, while it is in
        # flight, receives bring n2's message but never n1's second.
        got = receive_until(c, lambda g: j1[0] in [m.message_id for m in g], timeout=10, invisible_s=3, batch=1)
        held = next((m for m in got if m.message_id == j1[0]), None)
        assert held is not None, f"n1's first not received: {_by_lite_topic(got)}\n{_log(broker)}"
        got += receive_until(c, lambda g: j2 in [m.message_id for m in g + got], timeout=2, invisible_s=30)
        assert sorted(m.message_id for m in got) == sorted([j1[0], j2]), (
            f"received {_by_lite_topic(got)} while n1's first is in flight")
        for m in got:
            assert (m.topic, m.message_type, m.delivery_attempt) == (parent, LITE, 1), m
            assert m.lite_topic == (n1 if m is held else n2)
        c.ack(next(m for m in got if m is not held))

        # Not acked: after its 3 s the same message again (attempt 2), still before n1's second.
        again = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30)
        assert [(m.message_id, m.delivery_attempt) for m in again] == [(j1[0], 2)], _by_lite_topic(again)

        # 30 s -> 1 s: back within seconds with a new handle, attempt 3.
        old = again[0].receipt_handle
        c.change_invisible_duration(again[0], 1)
        assert again[0].receipt_handle and again[0].receipt_handle != old, "no new receipt handle"
        t0 = time.monotonic()
        third = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30)
        assert [(m.message_id, m.delivery_attempt) for m in third] == [(j1[0], 3)], _by_lite_topic(third)
        assert time.monotonic() - t0 < 8
        c.ack(third[0])

        # Acked: now n1's second, then nothing.
        last = receive_until(c, lambda g: len(g) >= 1, timeout=10, invisible_s=30)
        assert [m.message_id for m in last] == [j1[1]], _by_lite_topic(last)
        c.ack(last[0])
        assert receive_for(c, 1.5, invisible_s=1) == []


# --- names and quotas ---------------------------------------------------------------------------

def test_settings_reply_gives_the_name_length_the_client_checks(broker, unique):
    parent, group = _lite_parent(broker, unique("py-lite-len")), unique("py-lite-len-g")
    with lite_simple_consumer(broker.endpoint, group, parent) as c:
        subscribe_lite(c, "x" * 64)
        with pytest.raises(IllegalStateException, match="exceeded max length 64"):
            c.subscribe_lite("y" * 65)


@pytest.mark.parametrize("name", ["bad/name", "has space", "x" * 65], ids=["slash", "space", "65-chars"])
def test_illegal_lite_topic_name_refused(broker, unique, name):
    parent = _lite_parent(broker, unique("py-lite-bad"))
    with producer(broker.endpoint, parent) as p, pytest.raises(BadRequestException) as e:
        send(p, parent, b"never stored", lite_topic=name)
    assert e.value.code == ILLEGAL_LITE_TOPIC, e.value


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory: pytest.TempPathFactory):
    """A broker with small lite quotas (settings lite_subscription_quota, max_lite_topics_per_topic)."""
    env = {"ROCKMQ_LITE_SUBSCRIPTION_QUOTA": str(SUB_QUOTA), "ROCKMQ_MAX_LITE_TOPICS_PER_TOPIC": str(TOPIC_QUOTA)}
    b = BrokerProcess(tmp_path_factory.mktemp("lite-quota"), env=env).start()
    yield b
    b.stop()


def test_subscription_quota_is_the_clients_quota_exception(quota_broker, unique):
    parent, group = _lite_parent(quota_broker, unique("py-lite-subq")), unique("py-lite-subq-g")
    with lite_push_consumer(quota_broker.endpoint, group, parent, _success()) as c:
        subscribe_lite(c, *[f"q-{i}" for i in range(SUB_QUOTA)])
        with pytest.raises(LiteSubscriptionQuotaExceededException) as e:
            c.subscribe_lite("one-too-many")
        assert e.value.code == LITE_SUBSCRIPTION_QUOTA_EXCEEDED
        c.unsubscribe_lite("q-0")
        c.subscribe_lite("one-too-many")  # a freed place is usable again


def test_lite_topic_quota_is_the_clients_quota_exception(quota_broker, unique):
    parent = _lite_parent(quota_broker, unique("py-lite-topq"))
    with producer(quota_broker.endpoint, parent) as p:
        for i in range(TOPIC_QUOTA):
            send(p, parent, b"fits", lite_topic=f"t-{i}")
        with pytest.raises(LiteTopicQuotaExceededException) as e:
            send(p, parent, b"one lite topic too many", lite_topic="t-new")
        assert e.value.code == LITE_TOPIC_QUOTA_EXCEEDED
        send(p, parent, b"an existing lite topic still takes messages", lite_topic="t-0")


# --- auth: lite topics are covered by their parent's ACL entries --------------------------------

PARENT, GROUP = "acl-lite-sessions", "acl-lite-agents"


@pytest.fixture(scope="module")
def lite_acl_broker(tmp_path_factory: pytest.TempPathFactory):
    """--auth; alice may publish to PARENT, bob may consume it through GROUP (acl_setup's users)."""
    data_dir = tmp_path_factory.mktemp("lite-acl")
    users = Users(data_dir)
    for name, secret in SECRETS.items():
        users.create(name, secret, super_user=name == ADMIN)
    b = BrokerProcess(data_dir, "--auth").start()
    with open_channel(b.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=PARENT, message_types=["LITE"]),
                                             metadata=signed(ADMIN), timeout=RPC_TIMEOUT)
        grant(ch, "alice", f"Topic:{PARENT}", "Pub")
        grant(ch, "bob", f"Topic:{PARENT}", "Sub")
        grant(ch, "bob", f"Group:{GROUP}", "Sub")
    yield b
    b.stop()


def _creds(user: str) -> Credentials:
    return Credentials(user, SECRETS[user])


def test_parent_grants_cover_its_lite_topics(lite_acl_broker):
    listener = _success()
    with lite_push_consumer(lite_acl_broker.endpoint, GROUP, PARENT, listener, credentials=_creds("bob")) as c, \
            producer(lite_acl_broker.endpoint, PARENT, credentials=_creds("alice")) as p:
        subscribe_lite(c, "granted-session")
        sent = send(p, PARENT, b"covered by Topic:PARENT", lite_topic="granted-session")
        got = _consumed(listener, 1, timeout=20)
    assert [(m.message_id, m.lite_topic) for m in got] == [(sent.message_id, "granted-session")], _log(lite_acl_broker)


def test_without_the_parents_grant_a_lite_topic_is_refused(lite_acl_broker):
    with producer(lite_acl_broker.endpoint, PARENT, credentials=_creds("bob")) as p, \
            pytest.raises(ForbiddenException) as e:
        send(p, PARENT, b"bob may not publish", lite_topic="refused-session")
    assert e.value.code == FORBIDDEN
    # alice may publish, not consume. The broker refuses her consumer's Telemetry (Sub on GROUP), so
    # the client never learns a subscription quota (subscribe_lite fails in the client, quota 0);
    # her receive is refused with FORBIDDEN.
    with lite_simple_consumer(lite_acl_broker.endpoint, GROUP, PARENT, credentials=_creds("alice")) as c, \
            pytest.raises(ForbiddenException) as e:
        c.receive(1, 30)
    assert e.value.code == FORBIDDEN

