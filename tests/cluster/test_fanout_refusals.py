"""Admin calls answered across a cluster keep a caller's mistake a caller's mistake (issue 20 §1.4,
found by the fuzzer): DeleteTopic with an empty name asked every broker (the name servers take ""
for every topic), and the first refusal came back as INTERNAL_ERROR; another broker's refusal is
now relayed with its own kind (broker/api/replies.py `relayed`), also by a user or ACL change handed on."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from mqwire import META, RPC_TIMEOUT
from shard_set import ShardSet

from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc, users, users_grpc
from rockmq.protocol.errors import relayed


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory):
    b = ShardSet(Path(tmp_path_factory.mktemp("workers")), 2).start()
    yield b
    b.stop()


def test_an_empty_name_is_invalid_argument_on_a_cluster(workers: ShardSet):
    """Asked of a shard holding no topic (so it asks the shards that do), as the fuzzer did."""
    with grpc.insecure_channel(workers.endpoint) as channel:
        stub = admin_grpc.AdminStub(channel)
        stub.CreateTopic(admin.CreateTopicRequest(name="both", queue_count=2), timeout=RPC_TIMEOUT)
        (first, holder), (_, other) = sorted(workers.shards("both").items())
        stub.DeleteTopic(admin.TopicRequest(name="both"), timeout=RPC_TIMEOUT)
        stub.CreateTopic(admin.CreateTopicRequest(name="one", queue_count=1, brokers=[first]), timeout=RPC_TIMEOUT)
    for endpoint in (other, holder):
        with grpc.insecure_channel(endpoint) as channel:
            stub = admin_grpc.AdminStub(channel)
            for call, request in (("DeleteTopic", admin.TopicRequest(name="")), ("DescribeTopic", admin.TopicRequest(name="")),
                                  ("DescribeGroup", admin.GroupRequest(name=""))):
                with pytest.raises(grpc.RpcError) as err:
                    getattr(stub, call)(request, timeout=RPC_TIMEOUT)
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (endpoint, call, err.value)
                assert "illegal" in err.value.details(), err.value.details()
    assert workers.tracebacks == 0, list(workers.log)


@pytest.mark.parametrize("queues", [-(2**31), -1, 2049])
def test_a_queue_count_out_of_range_is_invalid_argument_on_a_cluster(workers: ShardSet, queues: int):
    """A negative count was divided over no broker (ZeroDivisionError: INTERNAL); the fuzzer's seed 1, case 33660."""
    with grpc.insecure_channel(workers.endpoint) as channel:
        with pytest.raises(grpc.RpcError) as err:
            admin_grpc.AdminStub(channel).CreateTopic(admin.CreateTopicRequest(name="counted", queue_count=queues),
                                                      timeout=RPC_TIMEOUT)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value
    assert err.value.details() == f"queue count must be 1..2048, not {queues}"
    assert workers.tracebacks == 0, list(workers.log)


class _Refusal(grpc.aio.AioRpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "refused")


@pytest.mark.parametrize(("code", "expected"), [
    (grpc.StatusCode.INVALID_ARGUMENT, pb.BAD_REQUEST), (grpc.StatusCode.FAILED_PRECONDITION, pb.FORBIDDEN),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, pb.TOO_MANY_REQUESTS), (grpc.StatusCode.UNAVAILABLE, pb.PROXY_TIMEOUT),
    (grpc.StatusCode.INTERNAL, pb.INTERNAL_ERROR), (grpc.StatusCode.UNKNOWN, pb.INTERNAL_ERROR)])
def test_another_brokers_refusal_keeps_its_kind(code: grpc.StatusCode, expected: int):
    assert relayed(_Refusal(code), "on broker b").code == expected


def test_a_change_another_broker_refuses_keeps_the_refusals_kind(tmp_path: Path):
    """A user made on one shard only (`local`): updating it through that shard hands the update on,
    the other shard answers NOT_FOUND, and so does the call (it said INTERNAL_ERROR)."""
    admin_user, secret = "admin", "fanout-admin-secret"
    shards = ShardSet(tmp_path / "data", 2, "--auth", "--admin-user", admin_user, "--admin-secret", secret).start()
    signed = (*META, *Credentials(admin_user, secret).headers())
    try:
        with grpc.insecure_channel(shards.endpoint) as channel:
            admin_grpc.AdminStub(channel).CreateTopic(admin.CreateTopicRequest(name="both", queue_count=2), metadata=signed,
                                                      timeout=RPC_TIMEOUT)
            route = svc.MessagingServiceStub(channel).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="both")),
                                                                 metadata=signed, timeout=RPC_TIMEOUT)
        address = route.message_queues[0].broker.endpoints.addresses[0]
        endpoint = f"{address.host}:{address.port}"
        with grpc.insecure_channel(endpoint) as channel:
            stub = users_grpc.UsersStub(channel)
            stub.CreateUser(users.CreateUserRequest(name="only-here", secret="only-here-secret", local=True), metadata=signed,
                            timeout=RPC_TIMEOUT)
            with pytest.raises(grpc.RpcError) as err:
                stub.UpdateUser(users.UpdateUserRequest(name="only-here", secret="another-secret"), metadata=signed,
                                timeout=RPC_TIMEOUT)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND, err.value
        assert "refused by" in err.value.details(), err.value.details()
    finally:
        shards.stop()
