"""README.md's shell and Python blocks, run as a reader pastes them, in order, against a broker of
this test (on an ephemeral port: the README's ports are rewritten to free ones, the default
endpoint is given as ROCKMQ_ENDPOINT, relative paths and /tmp/ land in a temporary directory). A block the
test cannot run says so right above it: `<!-- readme-test: skip (why) -->`. And the README's
install and test commands are what CI (`.ci/run`) runs."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from broker_process import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SKIP = re.compile(r"<!-- readme-test: skip \((.+?)\) -->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
README_PORTS = (8081, 9876, 9081, 9082, 9083, 9090, 8443, 8082, 8091, 9100, 2379, 2380, 9181, 9182, 9183)  # the tour's
# broker, the cluster's, the sharded one, TLS, the operated one and its HTTP port, etcd's and the coordinated group's


@dataclass
class Block:
    line: int
    lang: str
    text: str
    skip: str | None  # why the test does not run it

    @property
    def id(self) -> str:
        return f"line{self.line}-{self.lang}"


def blocks() -> list[Block]:
    """Every fenced block of the README with its language and skip mark."""
    out: list[Block] = []
    lines = README.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        skip = SKIP.match(lines[i - 1]) if i else None
        out.append(Block(i + 1, m.group(1), "\n".join(lines[i + 1:end]) + "\n", skip.group(1) if skip else None))
        i = end + 1
    return out


RUNNABLE = [b for b in blocks() if b.lang in ("bash", "sh", "python")]
NEEDS_SPARK = re.compile(r"pyspark|rockmq\.spark|order_pipeline")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def readme_env(tmp_path_factory: pytest.TempPathFactory):
    """The tour's broker, a working directory, a `rockmq` command on PATH, and the port map."""
    broker = BrokerProcess(tmp_path_factory.mktemp("readme-broker")).start()
    work = tmp_path_factory.mktemp("readme-work")
    (work / "examples").symlink_to(ROOT / "examples")  # blocks run "from the repository"
    bin_dir = tmp_path_factory.mktemp("readme-bin")
    shim = bin_dir / "rockmq"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rockmq "$@"\n')
    shim.chmod(0o755)
    ports = {8081: broker.port, **{p: _free_port() for p in README_PORTS[1:]}}
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "ROCKMQ_ENDPOINT": broker.endpoint,
           "PYTHONUNBUFFERED": "1"}
    yield work, env, ports
    broker.stop()


def _rewrite(text: str, ports: dict[int, int], work: Path) -> str:
    text = re.sub(r"\b(" + "|".join(map(str, ports)) + r")\b", lambda m: str(ports[int(m.group(1))]), text)
    return text.replace(" /tmp/", f" {work}/")


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_readme_block_runs(block: Block, readme_env) -> None:
    if block.skip:
        pytest.skip(f"README marks it: {block.skip}")
    if NEEDS_SPARK.search(block.text) and (importlib.util.find_spec("pyspark") is None or shutil.which("java") is None):
        pytest.skip("needs the spark extra and Java")
    work, env, ports = readme_env
    code = _rewrite(block.text, ports, work)
    cmd = ["bash", "-euo", "pipefail", "-c", code] if block.lang in ("bash", "sh") else [sys.executable, "-c", code]
    # Its own process group: what a block leaves running in the background (`&`) is ended with it;
    # output to a file, which those background servers may keep open.
    log = work / f"{block.id}.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            proc.wait(timeout=240)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    out = log.read_text()
    assert proc.returncode == 0, f"README line {block.line} failed (exit {proc.returncode}):\n{code}\n--- output:\n{out}"
    assert "Traceback" not in out, out


def _commands(text: str) -> list[str]:
    """Command lines, comments and blank lines left out, `python -m pip install -q` read as `pip install`."""
    lines = [ln.split(" #")[0].strip() for ln in text.splitlines()]
    return [re.sub(r"^python -m pip install -q\b", "pip install", ln) for ln in lines if ln and not ln.startswith("#")]


def test_readme_install_and_test_commands_are_what_ci_runs() -> None:
    ci = _commands((ROOT / ".ci" / "run").read_text())
    [install] = [b for b in blocks() if "pip install" in b.text and "venv" in b.text]
    [tests] = [b for b in blocks() if "scripts/test" in b.text]
    readme_install = [ln for ln in _commands(install.text) if ln.startswith("pip install")]
    assert readme_install and all(ln in ci for ln in readme_install), (readme_install, ci)
    last = re.sub(r"^([A-Z_]+=\S+ )+", "", ci[-1])  # environment settings before it (ROCKMQ_EXPECT_COMPILED=1)
    assert _commands(tests.text) == ["scripts/test"] == [last], "README's test command is not what .ci/run runs last"
    script = _commands((ROOT / "scripts" / "test").read_text())
    assert any("npm ci" in ln for ln in script), script
    assert script[-1] == 'python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=25 "$@"', script
