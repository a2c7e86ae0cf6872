"""TLS in a cluster (issue 19 §5): a name server serving TLS, two brokers each with a TLS listener and
a plaintext one, registering both; QueryRoute over each listener names every broker's endpoint of
that kind; brokers reach each other and the name server over TLS verified against --tls-ca; a
replica follows its primary over TLS."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import META, Conn, message
from tls_certs import CertFiles, free_port, make_certs
from waiting import wait_for

from rockmq.plumbing.channels import Tls, open_channel
from rockmq.protocol import namesrv, namesrv_grpc, pb, rpc, svc
from rockmq.protocol.endpoints import address_of, endpoints_of

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}


@pytest.fixture
def certs(tmp_path: Path) -> CertFiles:
    return make_certs(tmp_path / "certs")


def _tls_broker(root: Path, certs: CertFiles, *args: str) -> BrokerProcess:
    plaintext = free_port()
    b = BrokerProcess(root, *certs.serve_args(), "--tls-ca", str(certs.ca), "--plaintext-port", str(plaintext), *args,
                      env=ENV).start()
    b.plaintext_endpoint = f"127.0.0.1:{plaintext}"
    return b


def _live(ns: NameServerProcess, tls: Tls | None) -> list[namesrv.BrokerInfo]:
    with open_channel(ns.endpoint, tls) as ch:
        return list(namesrv_grpc.NameServerStub(ch).ListBrokers(namesrv.ListBrokersRequest(), timeout=5).brokers)


@pytest.fixture
def tls_cluster(tmp_path: Path, certs: CertFiles):
    ns = NameServerProcess(*certs.serve_args()).start()
    brokers = {}
    try:
        for name in ("b1", "b2"):
            brokers[name] = _tls_broker(tmp_path / name, certs, "--broker-name", name, "--namesrv", ns.endpoint)
        wait_for(lambda: {b.name for b in _live(ns, Tls(str(certs.ca)))} == {"b1", "b2"}, 15, 0.1, what="both brokers")
        yield ns, brokers
    finally:
        for b in brokers.values():
            b.kill()
        ns.kill()


def _route(endpoint: str, topic: str, tls: Tls | None) -> dict[str, str]:
    """QueryRoute through `endpoint` -> broker name -> the address the route names for it."""
    request = rpc.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=endpoints_of(endpoint))
    with open_channel(endpoint, tls) as ch:
        reply = svc.MessagingServiceStub(ch).QueryRoute(request, metadata=META, timeout=10)
    assert reply.status.code == pb.OK, reply.status
    return {q.broker.name: address_of(q.broker.endpoints) for q in reply.message_queues}


def test_route_names_the_listener_kind_the_client_came_in_on(tls_cluster, certs):
    ns, brokers = tls_cluster
    tls = Tls(str(certs.ca))
    registered = {b.name: b for b in _live(ns, tls)}
    for name, b in brokers.items():
        assert registered[name].tls and registered[name].endpoint == b.endpoint
        assert registered[name].plaintext_endpoint == b.plaintext_endpoint
    # Created through b1 over TLS: b1 creates b2's share through b2's TLS listener (verified with --tls-ca).
    r = brokers["b1"].cli("topic", "create", "orders", "--queues", "4", "--tls", "--tls-ca", str(certs.ca))
    assert r.returncode == 0 and "b1, b2" in r.stdout, r.stderr
    for b in brokers.values():
        assert _route(b.endpoint, "orders", tls) == {n: x.endpoint for n, x in brokers.items()}
        assert _route(b.plaintext_endpoint, "orders", None) == {n: x.plaintext_endpoint for n, x in brokers.items()}


def test_name_server_refuses_plaintext(tls_cluster):
    ns, _ = tls_cluster
    with pytest.raises(grpc.RpcError):
        _live(ns, None)


def test_replica_follows_its_primary_over_tls(tmp_path, certs):
    primary = _tls_broker(tmp_path / "primary", certs, "--replication", "sync", "--broker-name", "b1")
    replica = None
    try:
        replica = _tls_broker(tmp_path / "replica", certs, "--replica-of", primary.endpoint, "--broker-name", "b1")
        tls = Tls(str(certs.ca))
        conn = Conn(primary.endpoint, tls)
        try:
            conn.create_topic("r", queues=1)
            sent = {e.message_id for e in conn.send_ok(*(message("r", f"m{i}") for i in range(10)))}
        finally:
            conn.close()

        def caught_up() -> bool:
            c = Conn(replica.endpoint, tls)
            try:
                return {m.system_properties.message_id for m in c.pull_all("r", 0)} == sent
            except grpc.RpcError:
                return False
            finally:
                c.close()

        wait_for(caught_up, 15, what="the replica to catch up over TLS")
    finally:
        if replica is not None:
            replica.kill()
        primary.kill()
