"""The unmodified official clients over TLS (issue 19 §5): the Python client (`tls_enable=True`) and the
Node.js client (`sslEnabled: true`) send and receive through a broker's TLS listener, trusting the test
CA through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, as a user of either client would.

gRPC reads that variable once per process, so the Python client runs in a child process (this file,
run as a script); the Node client is smoke.mjs with --ssl.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from test_node_smoke import run_smoke
from tls_certs import make_certs


@contextlib.contextmanager
def tls_broker(tmp_path_factory: pytest.TempPathFactory, *args: str) -> Iterator[tuple[BrokerProcess, dict[str, str]]]:
    """A broker serving TLS only (with `args`, e.g. --auth), and the environment a client process trusts its CA in."""
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    b = BrokerProcess(tmp_path_factory.mktemp("tls-broker"), *certs.serve_args(), *args).start()
    try:
        yield b, {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(certs.ca)}
    finally:
        b.stop()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory):
    with tls_broker(tmp_path_factory) as served:
        yield served


def python_client(endpoint: str, topic: str, group: str, tls: bool, env: dict[str, str],
                  credentials: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The official Python client's round trip in a child process (`credentials`: its Credentials(ak, sk));
    the client's own log goes to the child's stderr."""
    cmd = [sys.executable, __file__, endpoint, topic, group, "tls" if tls else "plaintext", *credentials]
    here = Path(__file__).parent
    path = os.pathsep.join((str(here), str(here.parent), os.environ.get("PYTHONPATH", "")))  # as the tests' conftest puts them
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, env={**os.environ, **env, "PYTHONPATH": path})


def test_official_python_client_over_tls(tls, unique):
    broker, env = tls
    r = python_client(broker.endpoint, unique("py-tls"), unique("py-tls-g"), True, env)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n" + "\n".join(broker.log)
    assert json.loads(r.stdout.splitlines()[-1]) == {"received": ["official over tls"]}


def test_official_python_client_in_plaintext_on_the_tls_port_fails(tls, unique):
    broker, env = tls
    r = python_client(broker.endpoint, unique("py-plain"), unique("py-plain-g"), False, env)
    assert r.returncode != 0 and "received" not in r.stdout


def test_official_node_client_over_tls(tls, unique):
    broker, env = tls
    run_smoke(broker, broker.endpoint, unique, "--ssl", env=env)


def _round_trip(endpoint: str, topic: str, group: str, tls: bool, credentials: list[str]) -> None:
    """One message sent and received with the official client; prints {"received": [bodies]}."""
    from official_client import make_message, producer, receive_until, simple_consumer
    from rocketmq import Credentials

    # The client logs to a file of its own: its refusals (e.g. 40100) to stderr too, for the test to read.
    logging.getLogger("rocketmq-python-client").addHandler(logging.StreamHandler(sys.stderr))
    creds = Credentials(*credentials) if credentials else None
    with producer(endpoint, topic, tls=tls, credentials=creds) as p:
        p.send(make_message(topic, b"official over tls"))
    with simple_consumer(endpoint, group, {topic: "*"}, tls=tls, credentials=creds) as c:
        got = receive_until(c, lambda got: bool(got), timeout=20)
        for m in got:
            c.ack(m)
    print(json.dumps({"received": [m.body.decode() for m in got]}))


if __name__ == "__main__":
    _endpoint, _topic, _group, _how = sys.argv[1:5]
    _round_trip(_endpoint, _topic, _group, _how == "tls", sys.argv[5:7])
