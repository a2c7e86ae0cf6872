"""TLS on a broker (issue 19 §5, §6): `--tls-cert/--tls-key` make `--port` TLS only, `--plaintext-port`
adds a plaintext listener, certificates reload when their files change, bad files are refused at
start; the CLI and rockmq's own client speak TLS with `--tls --tls-ca` / `tls=Tls(ca)`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from tls_certs import CertFiles, free_port, make_certs

from rockmq.client import Message, Producer, PullConsumer, PushConsumer, SimpleConsumer, Tls
from rockmq.client.errors import RockmqError


@pytest.fixture
def certs(tmp_path: Path) -> CertFiles:
    return make_certs(tmp_path / "certs")


@pytest.fixture
def tls_broker(tmp_path: Path, certs: CertFiles):
    plaintext = free_port()
    b = BrokerProcess(tmp_path / "data", *certs.serve_args(), "--plaintext-port", str(plaintext)).start()
    b.plaintext_endpoint = f"127.0.0.1:{plaintext}"
    yield b
    b.kill()


def _rockmq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rockmq", *args], capture_output=True, text=True, timeout=60)


def _round_trip(endpoint: str, topic: str, group: str, **options) -> list[bytes]:
    with Producer(endpoint, timeout=10, **options) as p:
        p.send(Message(topic, b"over tls"))
    with SimpleConsumer(endpoint, group, {topic: "*"}, timeout=15, await_s=1, **options) as c:
        got = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            got = c.receive(8)
        for m in got:
            c.ack(m)
    return [m.body for m in got]


def test_own_client_over_tls_and_plaintext_beside_it(tls_broker, certs, unique):
    topic, group = unique("tls-own"), unique("tls-own-g")
    assert _round_trip(tls_broker.endpoint, topic, group, tls=Tls(str(certs.ca))) == [b"over tls"]
    assert _round_trip(tls_broker.plaintext_endpoint, topic + "-p", group) == [b"over tls"]


def test_push_and_pull_consumers_over_tls(tls_broker, certs, unique):
    topic, tls = unique("tls-push"), Tls(str(certs.ca))
    with Producer(tls_broker.endpoint, timeout=10, tls=tls) as p:
        sent = {p.send(Message(topic, f"m{i}".encode())).message_id for i in range(5)}
    got: set[str] = set()
    with PushConsumer(tls_broker.endpoint, unique("tls-push-g"), {topic: "*"}, lambda m: got.add(m.message_id), tls=tls):
        deadline = time.monotonic() + 15
        while got != sent and time.monotonic() < deadline:
            time.sleep(0.1)
    assert got == sent
    with PullConsumer(tls_broker.endpoint, unique("tls-pull-g"), tls=tls) as c:
        pulled = {m.message_id for q in c.queues(topic) for m in c.pull(q, 0, max_messages=32).messages}
    assert pulled == sent


def test_plaintext_client_on_tls_port_fails(tls_broker, unique):
    with pytest.raises(RockmqError):
        with Producer(tls_broker.endpoint, timeout=5, request_timeout=2, retries=0) as p:
            p.send(Message(unique("tls-plain"), b"x"))


def test_client_with_another_ca_is_refused(tls_broker, tmp_path, unique):
    stranger = make_certs(tmp_path / "other", "other")
    with pytest.raises(RockmqError):
        with Producer(tls_broker.endpoint, timeout=5, request_timeout=2, retries=0, tls=Tls(str(stranger.ca))) as p:
            p.send(Message(unique("tls-wrong-ca"), b"x"))


def test_cli_over_tls(tls_broker, certs, unique):
    topic, group = unique("tls-cli"), unique("tls-cli-g")
    tls = ["--endpoint", tls_broker.endpoint, "--tls", "--tls-ca", str(certs.ca)]
    r = _rockmq("topic", "create", topic, *tls)
    assert r.returncode == 0, r.stderr
    r = _rockmq("message", "send", topic, "hello tls", *tls)
    assert r.returncode == 0, r.stderr
    r = _rockmq("message", "tail", topic, "--group", group, "--count", "1", "--timeout", "10", *tls)
    assert r.returncode == 0 and "hello tls" in r.stdout, r.stderr
    plain = _rockmq("topic", "list", "--endpoint", tls_broker.endpoint)
    assert plain.returncode == 3 and plain.stderr.count("\n") == 1 and "Traceback" not in plain.stderr, plain.stderr
    missing = _rockmq("topic", "list", "--endpoint", tls_broker.endpoint, "--tls-ca", "/nonexistent/ca.pem")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr


def test_bench_over_tls(tls_broker, certs, unique):
    r = _rockmq("bench", "--endpoint", tls_broker.endpoint, "--tls-ca", str(certs.ca), "--scenario", "produce-batch",
                "--messages", "200", "--no-ceiling", "--topic", unique("tls-bench"), "--json")
    assert r.returncode == 0, r.stderr


def test_certificate_reload(tls_broker, certs, tmp_path, unique):
    topic = unique("tls-reload")
    _round_trip(tls_broker.endpoint, topic, unique("g"), tls=Tls(str(certs.ca)))
    renewed = make_certs(tmp_path / "renewed")  # another CA: a client of the old one can tell the difference
    for new, old in ((renewed.key, certs.key), (renewed.cert, certs.cert)):
        os.replace(new, old)
    deadline = time.monotonic() + 10
    while True:  # a new connection sees the new certificate (files' times may need a tick to differ)
        try:
            assert _round_trip(tls_broker.endpoint, unique("tls-reloaded"), unique("g"), tls=Tls(str(renewed.ca)),
                               request_timeout=2) == [b"over tls"]
            break
        except RockmqError:
            if time.monotonic() > deadline:
                raise
            os.utime(certs.cert)
            time.sleep(0.5)
    with pytest.raises(RockmqError):
        with Producer(tls_broker.endpoint, timeout=5, request_timeout=2, retries=0, tls=Tls(str(certs.ca))) as p:
            p.send(Message(topic, b"x"))


@pytest.mark.parametrize("case", ["missing", "mismatched", "garbage", "key only", "missing ca", "plaintext port alone"])
def test_bad_certificate_files_are_one_line_and_exit_2(tmp_path, certs, case):
    other = make_certs(tmp_path / "other", "other")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    flags = {"missing": ["--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", str(certs.key)],
             "mismatched": ["--tls-cert", str(certs.cert), "--tls-key", str(other.key)],
             "garbage": ["--tls-cert", str(garbage), "--tls-key", str(certs.key)],
             "key only": ["--tls-key", str(certs.key)],
             "missing ca": [*certs.serve_args(), "--tls-ca", str(tmp_path / "nope-ca.pem")],
             "plaintext port alone": ["--plaintext-port", "0"]}[case]
    r = _rockmq("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), *flags)
    assert r.returncode == 2, r
    assert r.stderr.startswith("rockmq: ") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "data").exists()


def test_name_server_bad_certificate_files_are_one_line_and_exit_2(tmp_path, certs):
    other = make_certs(tmp_path / "other", "other")
    for flags in (["--tls-cert", str(certs.cert), "--tls-key", str(other.key)], ["--tls-cert", str(certs.cert)]):
        r = _rockmq("namesrv", "--port", "0", *flags)
        assert r.returncode == 2 and r.stderr.startswith("rockmq: ") and r.stderr.count("\n") == 1, r.stderr
