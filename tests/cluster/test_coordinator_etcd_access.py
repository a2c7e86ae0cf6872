"""How a member reaches a guarded etcd (broker/coordination/etcd.py): over TLS verified against
--coordinator-ca, with a client certificate (--coordinator-cert/--coordinator-key), and as an etcd
user (--coordinator-user/--coordinator-password); a wrong password or a user without the group's keys
is one CoordinatorError, not retried, naming no secret."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import trustme
from etcd_process import EtcdProcess, EtcdTls

from rockmq.broker.coordination.coordinator import CoordinatorError, Primary
from rockmq.broker.coordination.etcd import EtcdCoordinator
from rockmq.config import load_settings

PASSWORD = "etcd-s3cret"


def _tls(directory: Path, client_certs: bool) -> tuple[EtcdTls, Path, Path]:
    """etcd's TLS files, and a client certificate and key its CA issued."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server, client = ca.issue_cert("127.0.0.1", "localhost"), ca.issue_cert("rockmq-member")
    files = {name: directory / name for name in ("ca.pem", "etcd.pem", "etcd.key", "member.pem", "member.key")}
    ca.cert_pem.write_to_path(str(files["ca.pem"]))
    server.private_key_pem.write_to_path(str(files["etcd.key"]))
    files["etcd.pem"].write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    client.private_key_pem.write_to_path(str(files["member.key"]))
    files["member.pem"].write_bytes(b"".join(blob.bytes() for blob in client.cert_chain_pems))
    tls = EtcdTls(files["ca.pem"], files["etcd.pem"], files["etcd.key"], files["ca.pem"] if client_certs else None)
    return tls, files["member.pem"], files["member.key"]


def _member(url: str, **settings: str) -> EtcdCoordinator:
    """A member as `rockmq serve` would make it from its settings."""
    given = {"coordinator": url, "replication": "sync", **settings}
    return EtcdCoordinator.from_settings(load_settings(overrides=given, environ={}), "a")


async def _campaigns(member: EtcdCoordinator) -> Primary | None:
    try:
        await member.register("a")
        return await member.campaign("a")
    finally:
        await member.close()


@pytest.mark.parametrize("client_certs", [False, True], ids=["server-tls", "client-certificates"])
def test_a_member_reaches_etcd_over_tls(tmp_path: Path, client_certs: bool):
    tls, cert, key = _tls(tmp_path / "certs", client_certs)
    etcd = EtcdProcess(tmp_path / "etcd", tls).start()
    try:
        mine = {"coordinator_cert": str(cert), "coordinator_key": str(key)} if client_certs else {}
        assert asyncio.run(_campaigns(_member(etcd.url, coordinator_ca=str(tls.ca), **mine))) == Primary("a", "a", 1)
        with pytest.raises(CoordinatorError):  # plaintext to a TLS port: no answer it understands
            asyncio.run(_campaigns(_member(etcd.url)))
        if client_certs:
            with pytest.raises(CoordinatorError):  # no certificate: etcd does not take it
                asyncio.run(_campaigns(_member(etcd.url, coordinator_ca=str(tls.ca))))
    finally:
        etcd.kill()


async def _guard(endpoint: str) -> None:
    """etcd's auth on: root, and a user `rockmq` whose role reads and writes /rockmq/ alone."""
    from etcd3aio import PermissionType, prefix_range_end
    from etcd3aio.auth import AuthService

    async with grpc.aio.insecure_channel(endpoint) as channel:
        auth = AuthService(channel)
        await auth.user_add("root", "root-pw", timeout=5)
        await auth.user_grant_role("root", "root", timeout=5)
        await auth.role_add("rockmq", timeout=5)
        await auth.role_grant_permission("rockmq", "/rockmq/", prefix_range_end("/rockmq/"),
                                         perm_type=PermissionType.READWRITE, timeout=5)
        for user in ("rockmq", "other"):
            await auth.user_add(user, PASSWORD, timeout=5)
        await auth.user_grant_role("rockmq", "rockmq", timeout=5)
        await auth.auth_enable(timeout=5)


def test_a_member_signs_in_as_an_etcd_user(etcd):
    asyncio.run(_guard(etcd.endpoint))
    as_rockmq = _member(etcd.url, coordinator_user="rockmq", coordinator_password=PASSWORD)
    assert asyncio.run(_campaigns(as_rockmq)) == Primary("a", "a", 1)
    for user, password, says in (("rockmq", "wrong", "refused"), ("other", PASSWORD, "refused")):
        with pytest.raises(CoordinatorError, match=says) as refused:
            asyncio.run(_campaigns(_member(etcd.url, coordinator_user=user, coordinator_password=password)))
        assert PASSWORD not in str(refused.value) and "wrong" not in str(refused.value)


def test_broker_group_signs_in_as_the_etcd_user_serve_does(etcd):
    asyncio.run(_guard(etcd.endpoint))
    asyncio.run(_campaigns(_member(etcd.url, coordinator_user="rockmq", coordinator_password=PASSWORD)))
    command = [sys.executable, "-m", "rockmq", "broker", "group", "broker-a", "--json", "--coordinator", etcd.url,
               "--coordinator-user", "rockmq"]
    env = {**os.environ, "ROCKMQ_COORDINATOR_PASSWORD": PASSWORD}  # as serve takes it
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["epoch"] == 1  # the member's lease was revoked: no primary now, its epoch kept
    env["ROCKMQ_COORDINATOR_PASSWORD"] = "wrong"
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1 and "refused" in refused.stderr
    assert "wrong" not in refused.stderr
