"""Users and ACLs in a cluster: `rockmq user create|update|delete` and `rockmq acl grant|revoke`
through one broker reach every live broker (handed on with the cluster's inner credentials), so a
user signs in, with the same grants, on any of them — here the shards of `rockmq serve --workers 2
--auth`, whose inner credentials the parent makes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from mqwire import META
from shard_set import ShardSet

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

ADMIN, SECRET = "admin", "shards-admin-secret"


@pytest.fixture
def shards(tmp_path: Path):
    s = ShardSet(tmp_path / "data", 2, "--auth", "--admin-user", ADMIN, "--admin-secret", SECRET).start()
    yield s
    s.kill()


def _cli(shards: ShardSet, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROCKMQ_ACCESS_KEY": ADMIN, "ROCKMQ_SECRET_KEY": SECRET}
    return subprocess.run([sys.executable, "-m", "rockmq", *args, "--endpoint", shards.endpoint], capture_output=True,
                          text=True, timeout=60, env=env)


def signs_in(endpoint: str, user: str, secret: str) -> grpc.StatusCode:
    with open_channel(endpoint) as channel:
        try:
            admin_grpc.AdminStub(channel).ListTopics(admin.ListTopicsRequest(), timeout=10,
                                                     metadata=(*META, *Credentials(user, secret).headers()))
        except grpc.RpcError as e:
            return e.code()
    return grpc.StatusCode.OK


def _endpoints(shards: ShardSet) -> list[str]:
    """Every shard's endpoint, from the route of a topic spread over them (asked as the admin)."""
    with open_channel(shards.endpoint) as channel:
        reply = svc.MessagingServiceStub(channel).QueryRoute(
            rpc.QueryRouteRequest(topic=pb.Resource(name="everywhere")), timeout=10,
            metadata=(*META, *Credentials(ADMIN, SECRET).headers()))
    assert reply.status.code == pb.OK, reply.status
    return sorted({f"{q.broker.endpoints.addresses[0].host}:{q.broker.endpoints.addresses[0].port}"
                   for q in reply.message_queues})


def test_user_changes_reach_every_shard(shards):
    assert _cli(shards, "topic", "create", "everywhere", "--queues", "4").returncode == 0
    r = _cli(shards, "user", "create", "ops", "--secret", "ops-secret", "--super")
    assert r.returncode == 0, r
    where = _endpoints(shards)
    assert len(where) == 2
    assert [signs_in(e, "ops", "ops-secret") for e in where] == [grpc.StatusCode.OK] * 2
    assert _cli(shards, "user", "update", "ops", "--secret", "new-secret").returncode == 0
    assert [signs_in(e, "ops", "new-secret") for e in where] == [grpc.StatusCode.OK] * 2
    assert _cli(shards, "user", "delete", "ops").returncode == 0
    assert [signs_in(e, "ops", "new-secret") for e in where] == [grpc.StatusCode.UNAUTHENTICATED] * 2


def test_acl_changes_reach_every_shard(shards):
    assert _cli(shards, "topic", "create", "everywhere", "--queues", "4").returncode == 0
    assert _cli(shards, "user", "create", "reader", "--secret", "reader-secret").returncode == 0
    where = _endpoints(shards)
    assert [signs_in(e, "reader", "reader-secret") for e in where] == [grpc.StatusCode.PERMISSION_DENIED] * 2
    r = _cli(shards, "acl", "grant", "reader", "--resource", "Topic:*", "--actions", "List")
    assert r.returncode == 0, r
    assert [signs_in(e, "reader", "reader-secret") for e in where] == [grpc.StatusCode.OK] * 2
    assert _cli(shards, "acl", "revoke", "reader", "--resource", "Topic:*").returncode == 0
    assert [signs_in(e, "reader", "reader-secret") for e in where] == [grpc.StatusCode.PERMISSION_DENIED] * 2
