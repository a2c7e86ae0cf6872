"""rocketmq-a2a (PyPI, the RocketMQ transport for the Agent-to-Agent protocol) against rockmq, unmodified
(issue 29): its echo agent daemon answers a `send-message` of its CLI, round trip over a NORMAL
business topic (request) and a LITE response topic (each side subscribes its own uuid lite topic in
one response group: per-client subscriptions, the reply creating the client's lite topic).

The package is installed with pip in a venv of its own, cached under the temp directory (it needs
a2a-sdk and mcp, which the project's venv does not have); the test is skipped, with pip's last
line, where pip cannot install it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "rocketmq-a2a==0.0.5"
VENV = Path(tempfile.gettempdir()) / "rockmq-compat-rocketmq-a2a-0.0.5"
PIP_TIMEOUT_S = 600
AGENT_START_S = 40
REPLY_TIMEOUT_S = 30
PROMPT_REPLY_S = 15
NAMESPACE = "rockmq-a2a"  # rocketmq-a2a's response tracking refuses an empty namespace


@pytest.fixture(scope="session")
def a2a_bin() -> Path:
    """The venv's bin directory, rocketmq-a2a installed in it (once; a lock keeps parallel workers out)."""
    done = VENV / ".installed"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{VENV}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _install()
            done.touch()
    return VENV / "bin"


def _install() -> None:
    steps = ([sys.executable, "-m", "venv", "--clear", str(VENV)],
             [str(VENV / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", PACKAGE])
    for cmd in steps:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.skip(f"{' '.join(cmd[:3])} did not finish within {PIP_TIMEOUT_S} s")
        if r.returncode != 0:
            last = (r.stderr.strip() or r.stdout.strip() or "no output").splitlines()[-1]
            pytest.skip(f"cannot install {PACKAGE} with pip: {last}")


def _create(broker, *args: str) -> None:
    r = broker.cli(*args)
    assert r.returncode == 0, f"rockmq {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"


@contextlib.contextmanager
def _agent_daemon(a2a_bin: Path, env: dict[str, str], home: Path, *args: str) -> Iterator[Path]:
    """rocketmq-a2a-agentd running until the block ends; yields its log file."""
    log = home / "agentd.out"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(a2a_bin / "rocketmq-a2a-agentd"), *args, "--pid-file", str(home / "agentd.pid"),
                                 "--lock-file", str(home / "agentd.lock"), "--log-file", str(home / "agentd.log")],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=home)
    try:
        deadline = time.monotonic() + AGENT_START_S
        while "Agent daemon started" not in log.read_text():
            assert proc.poll() is None, f"the agent daemon exited ({proc.returncode}):\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the agent daemon did not start in {AGENT_START_S} s:\n{log.read_text()}"
            time.sleep(0.2)
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_echo_agent_round_trip(a2a_bin, any_broker, unique, tmp_path):
    broker = any_broker
    biz, biz_group = unique("a2a-agent"), unique("a2a-agent-g")
    responses, response_group = unique("a2a-responses"), unique("a2a-responses-g")
    _create(broker, "topic", "create", biz, "--types", "NORMAL")
    _create(broker, "topic", "create", responses, "--types", "LITE")
    _create(broker, "group", "create", biz_group)
    _create(broker, "group", "create", response_group)

    registry = tmp_path / "agent-registry.json"
    env = {**os.environ, "HOME": str(tmp_path), "ROCKETMQ_ENDPOINT": broker.endpoint, "ROCKETMQ_NAMESPACE": NAMESPACE,
           "ROCKETMQ_ACCESS_KEY": "a2a-test", "ROCKETMQ_SECRET_KEY": "a2a-test-secret",
           "ROCKETMQ_WORK_AGENT_RESPONSE_TOPIC": responses, "ROCKETMQ_WORK_AGENT_RESPONSE_GROUP_ID": response_group}
    env.pop("PYTHONPATH", None)  # the venv's own packages only

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(a2a_bin / "rocketmq-a2a-cli"), "--registry", str(registry), *args], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=REPLY_TIMEOUT_S + 30)

    with _agent_daemon(a2a_bin, env, tmp_path, "--executor", "echo", "--agent-name", "echo",
                       "--registry", str(registry), "--biz-topic", biz, "--consumer-group", biz_group,
                       "--response-topic", responses, "--response-group-id", response_group) as agent_log:
        registered = cli("register-agent", "echo", biz)
        assert registered.returncode == 0, registered.stderr
        t0 = time.monotonic()
        reply = cli("send-message", "echo", "hello rockmq", "--timeout", str(REPLY_TIMEOUT_S))
        elapsed = time.monotonic() - t0
        diag = (f"exit {reply.returncode} after {elapsed:.1f} s\n--- cli stdout ---\n{reply.stdout}\n--- cli stderr ---\n"
                f"{reply.stderr[-4000:]}\n--- agent ---\n{agent_log.read_text()[-4000:]}\n--- broker ---\n"
                + "\n".join(list(broker.log)[-60:]))
    assert reply.returncode == 0, diag
    assert "Echo: hello rockmq" in reply.stdout, diag
    # Well within the client's 30-s COMPLETE_ADD: its subscribe_lite (a PARTIAL_ADD of the name's
    # characters) took effect at once.
    assert elapsed < PROMPT_REPLY_S, diag
