"""Users and ACLs on replicas (issue 19): a replica holds its primary's users and ACLs, handed over on
its Follow stream (signed with the cluster's inner credentials) — a full copy when it starts following,
so one that was down catches up, and every change after — so a user signs in on the replica to read,
and still does once the replica is promoted. The replica's own --admin-user gives way to the primary's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
from broker_process import BrokerProcess
from test_control_plane import ADMIN, ADMIN_SECRET, AUTH_ARGS, INNER_ARGS
from test_users_cluster import signs_in
from waiting import wait_for

from rockmq.protocol import replication, replication_grpc

OK, UNKNOWN, REFUSED = grpc.StatusCode.OK, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED
AS_ADMIN = ("--access-key", ADMIN, "--secret-key", ADMIN_SECRET)


def _as_admin(broker: BrokerProcess, *args: str) -> None:
    r = broker.cli(*args, *AS_ADMIN)
    assert r.returncode == 0, r.stdout + r.stderr


def _until(endpoint: str, user: str, secret: str, expected: grpc.StatusCode) -> None:
    wait_for(lambda: signs_in(endpoint, user, secret) == expected, 15, 0.2,
             what=f"{user} signing in on {endpoint}: {expected.name}")


def test_a_replica_holds_its_primarys_users_and_acls_and_keeps_them_when_promoted(tmp_path: Path):
    primary = BrokerProcess(tmp_path / "primary", *AUTH_ARGS, "--replication", "async", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--auth", "--admin-user", "standby", "--admin-secret", "standby-secret",
                            *INNER_ARGS, "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    try:
        _as_admin(primary, "topic", "create", "ledger", "--queues", "1")
        _as_admin(primary, "user", "create", "reader", "--secret", "reader-secret")
        _until(replica.endpoint, "reader", "reader-secret", REFUSED)  # the user is there, without a grant yet
        _as_admin(primary, "acl", "grant", "reader", "--resource", "Topic:*", "--actions", "List")
        _until(replica.endpoint, "reader", "reader-secret", OK)
        assert signs_in(replica.endpoint, ADMIN, ADMIN_SECRET) == OK  # the primary's super user...
        assert signs_in(replica.endpoint, "standby", "standby-secret") == UNKNOWN  # ... not its own any more
        listed = replica.cli("user", "list", *AS_ADMIN)
        assert listed.returncode == 0 and "reader" in listed.stdout and "reader-secret" not in listed.stdout, listed

        replica.stop()  # changes while it is down reach it when it follows again
        _as_admin(primary, "user", "update", "reader", "--secret", "new-reader-secret")
        _as_admin(primary, "user", "create", "auditor", "--secret", "auditor-secret")
        replica.start()
        _until(replica.endpoint, "reader", "new-reader-secret", OK)
        assert signs_in(replica.endpoint, "auditor", "auditor-secret") == REFUSED
        log = "\n".join(replica.log)
        assert "new-reader-secret" not in log and "auditor-secret" not in log

        primary.kill()
        promoted = replica.cli("broker", "promote", *AS_ADMIN)
        assert promoted.returncode == 0 and "promoted" in promoted.stdout, promoted.stdout + promoted.stderr
        wait_for(lambda: replica.cli("topic", "create", "after", "--queues", "1", *AS_ADMIN).returncode == 0, 30, 0.2,
                 what="the promoted replica to accept writes")
        assert signs_in(replica.endpoint, "reader", "new-reader-secret") == OK
        _as_admin(replica, "acl", "revoke", "reader", "--resource", "Topic:*")  # managed there now
        assert signs_in(replica.endpoint, "reader", "new-reader-secret") == REFUSED
    finally:
        replica.kill()
        primary.kill()


def test_a_primary_without_auth_hands_its_users_to_nobody(tmp_path: Path):
    """Without --auth, Follow answers anyone: a primary that once ran with --auth (its users.json is
    still there) streams its batches but no copy of its users."""
    BrokerProcess(tmp_path / "primary", *AUTH_ARGS).start().stop()
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async").start()

    def states() -> Iterator[replication.FollowerState]:
        yield replication.FollowerState(applied_seq=0)
        time.sleep(5)  # keep the stream open until the deadline

    got: list[replication.ReplicatedBatch] = []
    try:
        with grpc.insecure_channel(primary.endpoint) as channel:
            try:
                got.extend(replication_grpc.ReplicationStub(channel).Follow(states(), timeout=3))
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.DEADLINE_EXCEEDED, e
    finally:
        primary.kill()
    assert got and got[0].seq == 1, [b.seq for b in got]  # a stranger gets the batches (a broker without --auth is open)...
    assert not any(b.HasField("principals") for b in got)  # ... but never the users' secrets
