"""Issue 32 §1 and §2 against real name servers and brokers, as an attacker runs them.

§1 — on d850dd3 a broker with `--auth` and inner credentials registered with a name server that had
none; a stranger's anonymous Register of a fake broker then made the brokers send it `CreateUser`
(name and secret) and other calls signed with the inner credentials. Now a broker sends a signed
call or a secret only to an endpoint that proved it holds the inner credentials (`Inner.Prove`):
it does not register with an open name server (saying why, once), and a stranger who takes over a
known broker's address gets a handshake and nothing else.

§2 — on d850dd3 the inner credentials' header signed only its date, so one captured from any call
(a registration every 3 s) opened every method: Follow handed out every user's secret. Now a
control-plane call is signed over its method and a single-use nonce, and the date-only header a
d850dd3 broker sent opens nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import META, inner_signed
from test_control_plane import AUTH_ARGS, INNER, INNER_SECRET, _refused, as_admin
from waiting import wait_for

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import namesrv, namesrv_grpc, replication, replication_grpc, users, users_grpc

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
REGISTER, LIST_BROKERS = "/rockmq.namesrv.v1.NameServer/Register", "/rockmq.namesrv.v1.NameServer/ListBrokers"
FOLLOW = "/rockmq.replication.v1.Replication/Follow"
NOT_PROVEN = "did not prove it holds the cluster's inner credentials"


class Recorder(grpc.GenericRpcHandler):
    """A stranger's gRPC server: records every call it gets (method, headers) and answers none."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    def service(self, details: grpc.HandlerCallDetails) -> None:
        self.calls.append((details.method, dict(details.invocation_metadata)))
        return None  # UNIMPLEMENTED


@pytest.fixture
def stranger() -> Iterator[tuple[Recorder, grpc.Server]]:
    recorder = Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[recorder])
    yield recorder, server
    server.stop(0)


def _create_user(endpoint: str, name: str) -> None:
    """CreateUser as the super user (it fans out to every broker the name servers list)."""
    with open_channel(endpoint) as ch:
        try:
            users_grpc.UsersStub(ch).CreateUser(users.CreateUserRequest(name=name, secret="user-secret-1"),
                                                 metadata=as_admin(), timeout=15)
        except grpc.RpcError:
            pass  # a broker it could not reach or trust is named in the refusal; the user exists here


def test_a_broker_does_not_register_with_an_open_name_server(tmp_path: Path, stranger):
    recorder, server = stranger
    fake = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    ns = NameServerProcess().start()  # no inner credentials: anyone may register
    broker = None
    try:
        with open_channel(ns.endpoint) as ch:
            ns_stub = namesrv_grpc.NameServerStub(ch)
            ns_stub.Register(namesrv.RegisterRequest(broker=namesrv.BrokerInfo(name="evil", endpoint=fake)), timeout=5)
            broker = BrokerProcess(tmp_path / "b1", *AUTH_ARGS, "--broker-name", "b1", "--namesrv", ns.endpoint,
                                   env=ENV).start()
            wait_for(lambda: any(NOT_PROVEN in line for line in broker.log), 10, what="the broker saying why")
            time.sleep(1.0)  # three registration intervals
            listed = {b.name for b in ns_stub.ListBrokers(namesrv.ListBrokersRequest(), timeout=5).brokers}
        assert listed == {"evil"}  # b1 never registered there
        assert sum(NOT_PROVEN in line and ns.endpoint in line for line in broker.log) == 1, broker.log
        _create_user(broker.endpoint, "mallory")
        assert recorder.calls == []  # the fake broker got nothing: no CreateUser, no signed header
        assert INNER_SECRET not in "\n".join(broker.log)
    finally:
        if broker is not None:
            broker.kill()
        ns.kill()


def test_a_stranger_at_a_known_brokers_address_gets_only_the_handshake(tmp_path: Path, stranger):
    recorder, server = stranger
    ns = NameServerProcess("--inner-access-key", INNER, "--inner-secret-key", INNER_SECRET).start()
    b1 = b2 = None
    try:
        b1, b2 = (BrokerProcess(tmp_path / n, *AUTH_ARGS, "--broker-name", n, "--namesrv", ns.endpoint, env=ENV).start()
                  for n in ("b1", "b2"))
        with open_channel(ns.endpoint) as ch:
            stub = namesrv_grpc.NameServerStub(ch)
            wait_for(lambda: len(stub.ListBrokers(namesrv.ListBrokersRequest(), timeout=5,
                                                  metadata=inner_signed(LIST_BROKERS, INNER, INNER_SECRET)).brokers) == 2,
                     15, 0.1, what="both brokers registered")
        address = b2.endpoint
        b2.kill()  # the name server lists it until its registration times out
        wait_for(lambda: server.add_insecure_port(address) != 0, 10, 0.1, what=f"the stranger listening on {address}")
        server.start()
        _create_user(b1.endpoint, "mallory")
        methods = {method for method, _ in recorder.calls}
        assert methods <= {"/rockmq.inner.v1.Inner/Prove"}, methods
        assert not any("authorization" in headers for _, headers in recorder.calls)
        wait_for(lambda: any(NOT_PROVEN in line and address in line for line in b1.log), 5, what="b1 saying why")
    finally:
        for b in (b1, b2):
            if b is not None:
                b.kill()
        ns.kill()


def test_a_captured_control_plane_header_opens_nothing_else(tmp_path: Path):
    ns = NameServerProcess("--inner-access-key", INNER, "--inner-secret-key", INNER_SECRET).start()
    primary = BrokerProcess(tmp_path / "p", *AUTH_ARGS, "--replication", "sync", "--broker-name", "b1").start()
    try:
        with open_channel(ns.endpoint) as ch:
            stub = namesrv_grpc.NameServerStub(ch)
            captured = inner_signed(REGISTER, INNER, INNER_SECRET)
            mine = namesrv.RegisterRequest(broker=namesrv.BrokerInfo(name="b9", endpoint="127.0.0.1:1"))
            stub.Register(mine, metadata=captured, timeout=5)  # the call it was made for: once
            _refused(lambda: stub.Register(mine, metadata=captured, timeout=5), grpc.StatusCode.UNAUTHENTICATED)
            _refused(lambda: stub.ListBrokers(namesrv.ListBrokersRequest(), metadata=captured, timeout=5),
                     grpc.StatusCode.UNAUTHENTICATED)
        wait_for(lambda: any("replayed" in line for line in ns.log), 5, what="the replay in the audit log")
        with open_channel(primary.endpoint) as ch:
            follow = replication_grpc.ReplicationStub(ch).Follow

            def first_batch(metadata) -> None:
                next(iter(follow(iter([replication.FollowerState(applied_seq=0)]), metadata=metadata, timeout=5)))

            _refused(lambda: first_batch(captured), grpc.StatusCode.UNAUTHENTICATED)  # a Register header opens no Follow
            # what a d850dd3 broker sent with every call: the inner key signing only the date
            _refused(lambda: first_batch((*META, *Credentials(INNER, INNER_SECRET).headers())),
                     grpc.StatusCode.UNAUTHENTICATED)
            first_batch(inner_signed(FOLLOW, INNER, INNER_SECRET))  # a replica's own call still follows
    finally:
        primary.kill()
        ns.kill()
