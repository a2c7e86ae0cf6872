"""Lite topics with the official Node.js client (rocketmq-client-nodejs 1.0.8, the only version on
npm, pinned in node/package.json): its LitePushConsumer (1.0.8 has no LiteSimpleConsumer) gets
exactly its lite topics, once each, in order, the first within 5 s of the send, and nothing of a
lite topic after `unsubscribeLite`. node/lite.mjs drives the client and prints what it saw.

Needs node >= 18 and `npm ci` run once in tests/compat/node.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

NODE_DIR = Path(__file__).parent / "node"
CLIENT_PKG = NODE_DIR / "node_modules" / "rocketmq-client-nodejs" / "package.json"
TIMEOUT_S = 90
FIRST_DELIVERY_MS = 5000


def test_node_lite_push_consumer(any_broker, unique):
    broker = any_broker
    node = shutil.which("node")
    assert node, "node (>= 18) is not on PATH; the Node.js compat test needs it"
    assert CLIENT_PKG.exists(), f"rocketmq-client-nodejs is not installed: run `npm ci` in {NODE_DIR}"
    parent, group = unique("node-lite"), unique("node-lite-g")
    r = broker.cli("topic", "create", parent, "--types", "LITE")
    assert r.returncode == 0, r.stderr

    cmd = [node, "lite.mjs", "--endpoint", broker.endpoint, "--topic", parent, "--group", group,
           "--timeout", str(TIMEOUT_S - 15)]
    proc = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, timeout=TIMEOUT_S)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    diag = (f"exit {proc.returncode}\n--- node stderr ---\n{proc.stderr[-6000:]}\n--- broker ---\n"
            + "\n".join(list(broker.log)[-60:]))
    assert lines, f"lite.mjs printed no result\n{diag}"
    res = json.loads(lines[-1])
    assert res["ok"], f"lite.mjs failed in phase {res['phase']!r}: {res['error']}\n{diag}"

    got: dict[str, list[str]] = defaultdict(list)
    for m in res["received"]:
        assert (m["topic"], m["attempt"]) == (parent, 1), m
        got[m["lite_topic"]].append(m["id"])
    after = res["after_unsubscribe"]
    want = {"node-a": [*res["sent"]["node-a"], after["sent_a"]], "node-b": res["sent"]["node-b"]}
    assert dict(got) == want, f"received {dict(got)}\nexpected {want}\n{diag}"
    latency = res["received"][0]["ms"] - res["first_send_ms"]
    assert latency <= FIRST_DELIVERY_MS, f"first message {latency} ms after the first send"
