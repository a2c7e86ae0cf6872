"""The unmodified official clients against `rockmq serve --auth` with grants (ACL 2.0): a user granted
`Pub` on a topic sends to it but cannot consume it (FORBIDDEN, 40300); a user granted `Sub` on the
group and the topic consumes. Python 5.1.2 with `Credentials(ak, sk)`; Node 1.0.8 with
`sessionCredentials` (tests/compat/node/acl.mjs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from acl_setup import GROUP, SECRETS, TOPIC, start_acl_broker
from official_client import producer, receive_until, send, simple_consumer
from rocketmq import Credentials

NODE_DIR = Path(__file__).parent / "node"
FORBIDDEN = 40300


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory):
    b = start_acl_broker(tmp_path_factory.mktemp("acl-official"))
    yield b
    b.stop()


def creds(user: str) -> Credentials:
    return Credentials(user, SECRETS[user])


def test_python_publisher_cannot_consume_and_consumer_can(acl_broker):
    with producer(acl_broker.endpoint, TOPIC, credentials=creds("alice")) as p:
        sent = send(p, TOPIC, b"from alice")
    with simple_consumer(acl_broker.endpoint, GROUP, {TOPIC: "*"}, credentials=creds("alice")) as c, \
            pytest.raises(Exception, match=str(FORBIDDEN)):
        c.receive(1, 30)
    with simple_consumer(acl_broker.endpoint, GROUP, {TOPIC: "*"}, credentials=creds("bob")) as c:
        got = receive_until(c, lambda got: any(m.message_id == sent.message_id for m in got), timeout=20)
        for m in got:
            c.ack(m)
    assert sent.message_id in [m.message_id for m in got]


def _node(broker, user: str, role: str) -> dict:
    node = shutil.which("node")
    assert node, "node (>= 18) is not on PATH; the Node.js compat test needs it"
    assert (NODE_DIR / "node_modules" / "rocketmq-client-nodejs").exists(), f"run `npm ci` in {NODE_DIR}"
    cmd = [node, "acl.mjs", "--endpoint", broker.endpoint, "--topic", TOPIC, "--group", GROUP, "--access-key", user,
           "--secret-key", SECRETS[user], "--role", role]
    proc = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result\n--- stderr ---\n{proc.stderr}"
    return json.loads(lines[-1])


def test_node_publisher_cannot_consume_and_consumer_can(acl_broker):
    sent = _node(acl_broker, "alice", "send")
    assert sent["ok"], sent
    refused = _node(acl_broker, "alice", "receive")
    assert not refused["ok"] and refused["code"] == FORBIDDEN, refused
    assert "alice" in refused["error"] and f"Group:{GROUP}" in refused["error"]
    received = _node(acl_broker, "bob", "receive")
    assert received["ok"] and received["received"] >= 1, received
