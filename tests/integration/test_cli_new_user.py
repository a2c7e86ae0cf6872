"""What a new user hit (issue 28 §8), each against a real broker: a consumer with Sub tails, a refused
send creates nothing, one wording for a broker that cannot be reached (with the TLS hints, and no
gRPC log line), `message send`/`tail` say and show what a user needs, and list/describe speak JSON."""

from __future__ import annotations

import subprocess
import sys

import pytest
from acl_setup import GROUP, SECRETS, TOPIC, start_acl_broker
from broker_process import BrokerProcess
from test_cli import assert_one_line_error, closed_port, ok
from tls_certs import make_certs

from rockmq.cli.common import EXIT_REFUSED, EXIT_UNREACHABLE


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
