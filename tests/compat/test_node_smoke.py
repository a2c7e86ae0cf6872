"""Smoke test with the official RocketMQ 5 Node.js client (rocketmq-client-nodejs, pinned in node/package.json).

Needs node >= 18 and `npm ci` run once in tests/compat/node. The script prints one JSON line on
stdout with its results; the client's own log goes to stderr and is shown when the test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

NODE_DIR = Path(__file__).parent / "node"
SCRIPT = NODE_DIR / "smoke.mjs"
CLIENT_PKG = NODE_DIR / "node_modules" / "rocketmq-client-nodejs" / "package.json"
TIMEOUT_S = 90


def _broker_log(broker) -> str:
    return "\n".join(list(broker.log)[-200:])


def test_node_client_smoke(broker, unique):
    run_smoke(broker, broker.endpoint, unique)


def run_smoke(broker, endpoint: str, unique, *extra: str, env: dict[str, str] | None = None) -> None:
    """smoke.mjs against `endpoint` (`extra`: its flags, e.g. --ssl; `env`: added to the environment)."""
    node = shutil.which("node")
    assert node, "node (>= 18) is not on PATH; the Node.js compat test needs it"
    assert CLIENT_PKG.exists(), (
        f"rocketmq-client-nodejs is not installed: run `npm ci` in {NODE_DIR} "
        "(uses the committed package-lock.json)"
    )

    topic, group = unique("node-smoke"), unique("node-smoke-g")
    cmd = [node, str(SCRIPT), "--endpoint", endpoint, "--topic", topic, "--group", group,
           "--timeout", str(TIMEOUT_S - 15), *extra]
    try:
        proc = subprocess.run(cmd, cwd=NODE_DIR, capture_output=True, text=True, timeout=TIMEOUT_S,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as e:
        raise AssertionError(
            f"node smoke test did not exit within {TIMEOUT_S} s\n--- node stderr ---\n{e.stderr}\n"
            f"--- broker log ---\n{_broker_log(broker)}"
        ) from None

    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    diag = (f"exit code {proc.returncode}\n--- node stdout ---\n{proc.stdout}\n--- node stderr ---\n"
            f"{proc.stderr}\n--- broker log ---\n{_broker_log(broker)}")
    assert lines, f"node smoke test printed no JSON result\n{diag}"
    res = json.loads(lines[-1])

    assert proc.returncode == 0 and res["ok"], (
        f"node smoke test failed in phase {res.get('phase')!r}: {res.get('error')}\n{diag}")

    normal = res["normal"]
    assert len(normal["sent"]) == 3
    assert len(normal["received"]) == 3 and normal["acked"] == 3
    assert not normal["filtered_out_seen"]
    assert sorted(m["body"] for m in normal["received"]) == sorted(m["body"] for m in normal["sent"])
    assert {m["message_id"] for m in normal["received"]} == {m["message_id"] for m in normal["sent"]}
    for m in normal["received"]:
        assert m["tag"] == "TagA" and not m["corrupted"] and m["delivery_attempt"] >= 1
        assert len(m["keys"]) == 2

    delay = res["delay"]
    assert delay["acked"] is True
    assert 1500 <= delay["received_after_ms"] <= 20000, delay
