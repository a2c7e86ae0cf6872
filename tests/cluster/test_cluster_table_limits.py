"""Admin refusals across a cluster stay one readable line and keep their kind (issue 20 §2.4): a
CreateTopic naming 100,000 brokers that do not exist is refused naming ten and how many more, and a
shard at its max_topics refuses a topic spread over the shards with RESOURCE_EXHAUSTED, whichever
shard the call reached."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from mqwire import RPC_TIMEOUT
from shard_set import ShardSet

from rockmq.protocol import admin, admin_grpc


def test_cluster_admin_refusals_are_one_line_of_their_kind(tmp_path: Path):
    most = 3
    shards = ShardSet(tmp_path / "workers", 2, env={"ROCKMQ_MAX_TOPICS": str(most)}).start()
    try:
        with grpc.insecure_channel(shards.endpoint) as channel:
            stub = admin_grpc.AdminStub(channel)
            unknown = [f"no-such-broker-{i}" for i in range(100_000)]
            with pytest.raises(grpc.RpcError) as err:
                stub.CreateTopic(admin.CreateTopicRequest(name="t", queue_count=2, brokers=unknown), timeout=RPC_TIMEOUT)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value
            assert "no-such-broker-9 ... and 99,990 more" in err.value.details() and len(err.value.details()) < 1000
            for i in range(most):  # each over both shards
                stub.CreateTopic(admin.CreateTopicRequest(name=f"t{i}", queue_count=2), timeout=RPC_TIMEOUT)
            with pytest.raises(grpc.RpcError) as err:
                stub.CreateTopic(admin.CreateTopicRequest(name="one-too-many", queue_count=2), timeout=RPC_TIMEOUT)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_topics" in err.value.details(), err.value
    finally:
        shards.stop()
    assert shards.tracebacks == 0, list(shards.log)
