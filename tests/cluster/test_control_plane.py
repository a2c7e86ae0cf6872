"""A closed control plane (issue 19 §4): with auth on, replication and the name server answer only
calls signed with the cluster's inner credentials (`--inner-access-key` / `--inner-secret-key`),
while brokers that have them register, fan admin calls out to each other and follow their primary
— here over TLS too."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import META, inner_signed, message
from shard_set import ShardSet
from tls_certs import CertFiles, make_certs
from waiting import wait_for

from rockmq.plumbing.channels import Tls, open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, namesrv, namesrv_grpc, pb, replication, replication_grpc, rpc, svc

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
ADMIN, ADMIN_SECRET = "admin", "admin-secret-1"
INNER, INNER_SECRET = "cluster-inner", "inner-secret-1"
INNER_ARGS = ("--inner-access-key", INNER, "--inner-secret-key", INNER_SECRET)
AUTH_ARGS = ("--auth", "--admin-user", ADMIN, "--admin-secret", ADMIN_SECRET, *INNER_ARGS)


def signed(user: str, secret: str) -> tuple[tuple[str, str], ...]:
    return (*META, *Credentials(user, secret).headers())




def as_admin() -> tuple[tuple[str, str], ...]:
    """The super user's headers, signed now (a date older than auth_max_clock_skew_s is refused)."""
    return signed(ADMIN, ADMIN_SECRET)


def wrong_inner() -> tuple[tuple[str, str], ...]:
    return signed(INNER, "not-the-secret")

LIST_BROKERS, DESCRIBE_TOPIC = "/rockmq.namesrv.v1.NameServer/ListBrokers", "/rockmq.admin.v1.Admin/DescribeTopic"


def as_inner(method: str) -> tuple[tuple[str, str], ...]:
    return inner_signed(method, INNER, INNER_SECRET)


@pytest.fixture
def certs(tmp_path: Path) -> CertFiles:
    return make_certs(tmp_path / "certs")


def _broker(root: Path, certs: CertFiles, *args: str) -> BrokerProcess:
    return BrokerProcess(root, *AUTH_ARGS, *certs.serve_args(), "--tls-ca", str(certs.ca), *args, env=ENV).start()


def _refused(call, code: grpc.StatusCode, says: str = "") -> str:
    with pytest.raises(grpc.RpcError) as e:
        call()
    assert e.value.code() == code and says in (e.value.details() or ""), (e.value.code(), e.value.details())
    return e.value.details() or ""


@pytest.fixture
def secured_cluster(tmp_path: Path, certs: CertFiles) -> Iterator[tuple[NameServerProcess, dict[str, BrokerProcess], Tls]]:
    ns = NameServerProcess(*INNER_ARGS, *certs.serve_args()).start()
    tls = Tls(str(certs.ca))
    brokers: dict[str, BrokerProcess] = {}
    try:
        for name in ("b1", "b2"):
            brokers[name] = _broker(tmp_path / name, certs, "--broker-name", name, "--namesrv", ns.endpoint)
        wait_for(lambda: {b.name for b in _live(ns, tls)} == {"b1", "b2"}, 15, 0.1, what="both brokers")
        yield ns, brokers, tls
    finally:
        for b in brokers.values():
            b.kill()
        ns.kill()


def _live(ns: NameServerProcess, tls: Tls) -> list[namesrv.BrokerInfo]:
    with open_channel(ns.endpoint, tls) as ch:
        return list(namesrv_grpc.NameServerStub(ch).ListBrokers(namesrv.ListBrokersRequest(),
                                                                  metadata=as_inner(LIST_BROKERS), timeout=5).brokers)


def test_name_server_answers_only_the_inner_credentials(secured_cluster):
    ns, brokers, tls = secured_cluster
    forged = namesrv.RegisterRequest(broker=namesrv.BrokerInfo(name="b1", endpoint="127.0.0.1:1"))
    with open_channel(ns.endpoint, tls) as ch:
        stub = namesrv_grpc.NameServerStub(ch)
        for metadata, says in ((META, "no credentials"), (wrong_inner(), "authentication failed"),
                               (as_admin(), "authentication failed")):  # a broker's super user is not the cluster
            _refused(lambda m=metadata: stub.Register(forged, metadata=m, timeout=5), grpc.StatusCode.UNAUTHENTICATED, says)
            _refused(lambda m=metadata: stub.ListBrokers(namesrv.ListBrokersRequest(), metadata=m, timeout=5),
                     grpc.StatusCode.UNAUTHENTICATED, says)
    # The forged registrations changed nothing: b1 is still where it registered itself.
    assert {b.name: b.endpoint for b in _live(ns, tls)}["b1"] == brokers["b1"].endpoint
    assert INNER_SECRET not in "\n".join(ns.log)


def test_brokers_fan_admin_calls_out_with_the_inner_credentials(secured_cluster):
    _, brokers, tls = secured_cluster
    with open_channel(brokers["b1"].endpoint, tls) as ch:
        created = admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name="orders", queue_count=4),
                                                       metadata=as_admin(), timeout=10)
    assert sorted({q.broker for q in created.queues}) == ["b1", "b2"]  # b2's share made by b1, signed as the cluster
    with open_channel(brokers["b2"].endpoint, tls) as ch:
        stub = admin_grpc.AdminStub(ch)
        _refused(lambda: stub.DescribeTopic(admin.TopicRequest(name="orders", local=True), metadata=META, timeout=5),
                 grpc.StatusCode.UNAUTHENTICATED, "no credentials")
        _refused(lambda: stub.DescribeTopic(admin.TopicRequest(name="orders", local=True), metadata=wrong_inner(),
                                            timeout=5), grpc.StatusCode.UNAUTHENTICATED)
        assert stub.DescribeTopic(admin.TopicRequest(name="orders", local=True), metadata=as_inner(DESCRIBE_TOPIC),
                                  timeout=5).queue_count == 2


def test_replica_follows_with_the_inner_credentials_and_nobody_else_may(tmp_path, certs):
    primary = _broker(tmp_path / "primary", certs, "--replication", "sync", "--broker-name", "b1")
    replica = None
    tls = Tls(str(certs.ca))
    try:
        with open_channel(primary.endpoint, tls) as ch:
            follow = replication_grpc.ReplicationStub(ch).Follow

            def first_batch(metadata) -> None:
                next(iter(follow(iter([replication.FollowerState(applied_seq=0)]), metadata=metadata, timeout=5)))

            _refused(lambda: first_batch(META), grpc.StatusCode.UNAUTHENTICATED, "no credentials")
            _refused(lambda: first_batch(wrong_inner()), grpc.StatusCode.UNAUTHENTICATED)
            _refused(lambda: first_batch(as_admin()), grpc.StatusCode.PERMISSION_DENIED, "inner credentials")  # even a super user
        replica = _broker(tmp_path / "replica", certs, "--replica-of", primary.endpoint, "--broker-name", "b1")
        with open_channel(primary.endpoint, tls) as ch:
            admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name="r", queue_count=1), metadata=as_admin(),
                                                 timeout=10)
            reply = svc.MessagingServiceStub(ch).SendMessage(rpc.SendMessageRequest(messages=[message("r", "m")]),
                                                             metadata=as_admin(), timeout=20)  # sync: a replica confirmed it
        assert reply.status.code == pb.OK and reply.entries[0].status.code == pb.OK, reply
        sent = reply.entries[0].message_id

        def on_replica() -> bool:
            with open_channel(replica.endpoint, tls) as ch:
                info = admin_grpc.AdminStub(ch).DescribeTopic(admin.TopicRequest(name="r"), metadata=as_admin(), timeout=5)
            return info.queues[0].max_offset == 1

        wait_for(on_replica, 15, what=f"message {sent} on the replica")
    finally:
        if replica is not None:
            replica.kill()
        primary.kill()


def test_shards_of_one_broker_get_inner_credentials_of_their_own(tmp_path):
    """`rockmq serve --workers 2 --auth` without inner credentials: its shards register with its
    embedded name server and fan admin calls out to each other with a pair it made for them."""
    shards = ShardSet(tmp_path / "data", 2, "--auth", "--admin-user", ADMIN, "--admin-secret", ADMIN_SECRET).start()
    try:
        with open_channel(shards.endpoint) as ch:
            created = admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name="spread", queue_count=4),
                                                           metadata=as_admin(), timeout=10)
        assert sorted({q.broker for q in created.queues}) == ["broker-a-0", "broker-a-1"]
    finally:
        shards.kill()


def test_a_draining_broker_unregisters_signed_and_nobody_else_may(secured_cluster):
    """Unregister is the control plane's (a stranger would take a broker out of routes); a broker
    run with --auth drains (SIGTERM) by unregistering with the inner credentials: gone at once, not
    after the name server's timeout."""
    ns, brokers, tls = secured_cluster
    b2 = brokers["b2"]
    forged = namesrv.UnregisterRequest(broker=namesrv.BrokerInfo(name="b2", endpoint=b2.endpoint))
    with open_channel(ns.endpoint, tls) as ch:
        stub = namesrv_grpc.NameServerStub(ch)
        for metadata in (META, wrong_inner(), as_admin()):
            _refused(lambda m=metadata: stub.Unregister(forged, metadata=m, timeout=5), grpc.StatusCode.UNAUTHENTICATED)
    assert {b.name for b in _live(ns, tls)} == {"b1", "b2"}
    assert b2.proc is not None
    b2.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: {b.name for b in _live(ns, tls)} == {"b1"}, 3, 0.05, what="b2 unregistered")
    assert b2.proc.wait(10) == 0
