"""What a new user hit (issue 28 §8), each against a real broker: a consumer with Sub tails, a refused
send creates nothing, one wording for a broker that cannot be reached (with the TLS hints, and no
gRPC log line), `message send`/`tail` say and show what a user needs, and list/describe speak JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from acl_setup import GROUP, SECRETS, TOPIC, start_acl_broker
from broker_process import BrokerProcess
from test_cli import assert_one_line_error, closed_port, ok
from tls_certs import make_certs

from rockmq.cli.common import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE


def rockmq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rockmq", *args], capture_output=True, text=True, timeout=60)


# --- a consumer with Sub tails -----------------------------------------------------------------


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory):
    b = start_acl_broker(tmp_path_factory.mktemp("acl"))
    yield b
    b.stop()


def test_a_consumer_granted_sub_tails_what_a_producer_sent(acl_broker):
    """bob has Sub on the topic and the group (as the README's orders-app), and no Get."""
    def as_user(user: str, *args: str) -> subprocess.CompletedProcess[str]:
        return acl_broker.cli(*args, "--access-key", user, "--secret-key", SECRETS[user])

    ok(as_user("alice", "message", "send", TOPIC, "for bob"))
    tailed = ok(as_user("bob", "message", "tail", TOPIC, "--group", GROUP, "--count", "1", "--timeout", "10"))
    assert "for bob" in tailed
    assert TOPIC in ok(as_user("bob", "topic", "describe", TOPIC))  # DescribeTopic: Get or Sub
    refused = as_user("alice", "message", "tail", TOPIC, "--group", GROUP, "--count", "1")
    assert_one_line_error(refused, EXIT_REFUSED, "alice", "may not")


# --- a refused send creates nothing ------------------------------------------------------------


def test_a_send_to_a_dead_letter_topic_creates_nothing(broker):
    refused = broker.cli("message", "send", "%DLQ%zzz-never", "x")
    assert_one_line_error(refused, EXIT_REFUSED, "%DLQ%zzz-never", "dead-letter")
    assert "%DLQ%zzz-never" not in ok(broker.cli("topic", "list"))
    assert "zzz-never" not in ok(broker.cli("group", "list"))


# --- a broker that cannot be reached -----------------------------------------------------------


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    b = BrokerProcess(tmp_path_factory.mktemp("tls"), *certs.serve_args()).start()
    yield b, certs.ca
    b.stop()


COMMANDS = (("topic", "list"), ("message", "send", "t", "x"), ("message", "tail", "t", "--group", "g", "--count", "1"))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_one_wording_with_a_hint_when_nothing_listens(command: tuple[str, ...]):
    endpoint = f"127.0.0.1:{closed_port()}"
    failed = rockmq(*command, "--endpoint", endpoint)
    assert_one_line_error(failed, EXIT_UNREACHABLE, f"rockmq: cannot reach the broker at {endpoint}: "
                                                    "is `rockmq serve` running there?")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c[:2]))
def test_tls_mismatches_say_what_to_add(command: tuple[str, ...], tls_broker, broker):
    tls, ca = tls_broker
    for flags, says in (((), "the server speaks TLS: add --tls"),
                        (("--tls",), "certificate not trusted: give --tls-ca")):
        failed = rockmq(*command, "--endpoint", tls.endpoint, *flags)
        assert_one_line_error(failed, EXIT_UNREACHABLE, f"cannot reach the broker at {tls.endpoint}: {says}")
    failed = rockmq(*command, "--endpoint", broker.endpoint, "--tls-ca", str(ca))
    assert_one_line_error(failed, EXIT_UNREACHABLE, "the server does not speak TLS: drop --tls")
    if command[0] == "topic":
        ok(rockmq(*command, "--endpoint", tls.endpoint, "--tls-ca", str(ca)))


# --- message send and tail ---------------------------------------------------------------------


def test_a_program_importing_the_cli_keeps_its_grpc_log():
    """Only the command quiets gRPC's own log: a program (a test run, an application) that imports
    rockmq.cli keeps its environment, and so do the servers it starts (a replica's TLS refusal is logged)."""
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    code = "import os, rockmq.cli; print(os.environ.get('GRPC_VERBOSITY'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "None", out


def test_delay_and_deliver_at_say_what_they_take(broker):
    negative = broker.cli("message", "send", "t-delay", "x", "--delay", "-5s")
    assert_one_line_error(negative, EXIT_USAGE, "invalid delay '-5s'", "cannot be negative")
    zoneless = broker.cli("message", "send", "t-delay", "x", "--deliver-at", "2027-03-01T12:00:00")
    assert_one_line_error(zoneless, EXIT_USAGE, "has no zone", "add a zone")
    helped = rockmq("message", "send", "--help").stdout
    assert "with a zone" in " ".join(helped.split()) and "local time" not in helped


def test_send_says_broker_and_queue_and_tail_shows_keys_and_properties(broker, unique):
    topic, group = unique("nu-send"), unique("nu-send-g")
    ok(broker.cli("topic", "create", topic, "--queues", "1"))
    sent = ok(broker.cli("message", "send", topic, "hello", "--key", "k1", "--key", "k2", "--property", "region=eu",
                         "--tag", "a"))
    assert sent.rstrip().endswith(f"to {topic} at offset 0 (broker broker-a, queue 0)"), sent
    line = ok(broker.cli("message", "tail", topic, "--group", group, "--count", "1", "--timeout", "10")).rstrip()
    assert line.startswith("[broker-a:0:0] id=") and line.endswith("hello")
    assert ' tag=a keys=k1,k2 properties={"region": "eu"} attempt=1 ' in line, line


def test_tail_filters_with_sql_and_peeks_without_acknowledging(broker, unique):
    topic, group = unique("nu-sql"), unique("nu-sql-g")
    ok(broker.cli("topic", "create", topic, "--queues", "1"))
    for region in ("us", "eu"):
        ok(broker.cli("message", "send", topic, f"from {region}", "--property", f"region={region}"))
    peeked = ok(broker.cli("message", "tail", topic, "--group", group, "--sql", "region = 'eu'", "--no-ack",
                           "--count", "1", "--timeout", "10"))
    assert peeked.rstrip().endswith("from eu"), peeked
    described = json.loads(ok(broker.cli("group", "describe", group, "--json")))
    assert described["inflight"] == 1 and described["queues"][0]["lag"] >= 1  # peeked: still the group's to consume
    both = broker.cli("message", "tail", topic, "--group", group, "--tag", "a", "--sql", "TRUE")
    assert_one_line_error(both, EXIT_USAGE, "not allowed with argument")


# --- --json on list and describe ---------------------------------------------------------------


def test_list_and_describe_take_json(broker, unique):
    topic, group = unique("nu-json"), unique("nu-json-g")
    ok(broker.cli("topic", "create", topic, "--queues", "2"))
    ok(broker.cli("group", "create", group, "--max-attempts", "5"))
    topics = {t["name"]: t for t in json.loads(ok(broker.cli("topic", "list", "--json")))}
    assert topics[topic]["queue_count"] == 2
    described = json.loads(ok(broker.cli("topic", "describe", topic, "--json")))
    assert [(q["queue_id"], q["min_offset"], q["max_offset"]) for q in described["queues"]] == [(0, 0, 0), (1, 0, 0)]
    groups = {g["name"]: g for g in json.loads(ok(broker.cli("group", "list", "--json")))}
    assert groups[group]["max_attempts"] == 5 and groups[group]["fifo"] is False
    assert json.loads(ok(broker.cli("group", "describe", group, "--json")))["name"] == group


def test_user_and_acl_lists_take_json(acl_broker):
    def as_admin(*args: str) -> str:
        return ok(acl_broker.cli(*args, "--access-key", "admin", "--secret-key", SECRETS["admin"]))

    users = {u["name"]: u for u in json.loads(as_admin("user", "list", "--json"))}
    assert users["admin"]["super_user"] is True and "secret" not in json.dumps(users)
    entries = json.loads(as_admin("acl", "list", "bob", "--json"))
    assert {(e["resource"], tuple(e["actions"])) for e in entries} == {(f"Topic:{TOPIC}", ("Sub",)),
                                                                        (f"Group:{GROUP}", ("Sub",))}


# --- docs/client.md: the sync SimpleConsumer ---------------------------------------------------


def test_the_sync_simple_consumer_long_polls_and_acks_many(broker, unique):
    from rockmq.client import Message, Producer, SimpleConsumer

    topic, group = unique("nu-sync"), unique("nu-sync-g")
    ok(broker.cli("topic", "create", topic, "--queues", "1"))
    with SimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=2) as c:
        started = time.monotonic()
        assert c.receive() == []  # empty: it waited for a message to arrive
        assert time.monotonic() - started >= 1.5
        with Producer(broker.endpoint) as p:
            for i in range(3):
                p.send(Message(topic, f"m{i}".encode()))
        received = c.receive(invisible_s=30)
        assert sorted(m.body for m in received) == [b"m0", b"m1", b"m2"]
        assert c.ack_many(received) == []
    assert json.loads(ok(broker.cli("group", "describe", group, "--json")))["inflight"] == 0
