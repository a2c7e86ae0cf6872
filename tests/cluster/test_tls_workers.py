"""`rockmq serve --workers 2` with TLS (issue 19 §5): every shard listens as --port does (TLS, with a
plaintext listener beside it when --plaintext-port is given), the shards reach their embedded name
server and each other over TLS, and routes through either listener of --port name every shard's
listener of that kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from shard_set import ShardSet
from test_tls_cluster import _route
from tls_certs import free_port, make_certs

from rockmq.client import Message, Producer, SimpleConsumer, Tls


@pytest.fixture
def tls_shards(tmp_path: Path):
    certs = make_certs(tmp_path / "certs")
    plaintext = free_port()
    s = ShardSet(tmp_path / "data", 2, *certs.serve_args(), "--tls-ca", str(certs.ca), "--plaintext-port",
                 str(plaintext)).start()
    s.plaintext_endpoint = f"127.0.0.1:{plaintext}"
    s.tls = Tls(str(certs.ca))
    yield s
    s.kill()


def test_shards_serve_tls_and_routes_name_the_listener_kind(tls_shards):
    s = tls_shards
    r = s.cli("topic", "create", "spread", "--queues", "4", "--tls-ca", s.tls.ca_file)
    assert r.returncode == 0 and "broker-a-0, broker-a-1" in r.stdout, r.stderr
    over_tls = _route(s.endpoint, "spread", s.tls)
    plaintext = _route(s.plaintext_endpoint, "spread", None)
    assert sorted(over_tls) == sorted(plaintext) == ["broker-a-0", "broker-a-1"]
    assert over_tls["broker-a-0"] == s.endpoint and plaintext["broker-a-0"] == s.plaintext_endpoint
    assert over_tls["broker-a-1"] != plaintext["broker-a-1"]
    with Producer(s.endpoint, timeout=10, tls=s.tls) as p:
        sent = {p.send(Message("spread", f"m{i}".encode())).message_id for i in range(8)}
    got: set[str] = set()
    with SimpleConsumer(s.plaintext_endpoint, "g", {"spread": "*"}, timeout=15, await_s=1) as c:
        for _ in range(20):
            batch = c.receive(16)
            for m in batch:
                c.ack(m)
            got |= {m.message_id for m in batch}
            if got == sent:
                break
    assert got == sent
