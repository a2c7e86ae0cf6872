"""A replica verifies its primary over TLS (issue 19 §5): against --tls-ca, a primary whose
certificate another CA signed (an impostor at the primary's address) is never followed."""

from __future__ import annotations

import time

import grpc
from broker_process import BrokerProcess
from mqwire import Conn, message
from tls_certs import make_certs

from rockmq.plumbing.channels import Tls


def test_replica_refuses_a_primary_its_ca_did_not_sign(tmp_path):
    theirs, ours = make_certs(tmp_path / "impostor", "impostor"), make_certs(tmp_path / "ours", "ours")
    primary = BrokerProcess(tmp_path / "primary", *theirs.serve_args(), "--replication", "async", "--broker-name", "b1").start()
    replica = None
    try:
        replica = BrokerProcess(tmp_path / "replica", *ours.serve_args(), "--tls-ca", str(ours.ca),
                                "--replica-of", primary.endpoint, "--broker-name", "b1").start()
        conn = Conn(primary.endpoint, Tls(str(theirs.ca)))
        try:
            conn.create_topic("impostor", queues=1)
            conn.send_ok(*(message("impostor", f"m{i}") for i in range(3)))
        finally:
            conn.close()
        time.sleep(3)  # several follow attempts
        c = Conn(replica.endpoint, Tls(str(ours.ca)))
        try:
            try:
                copied = c.pull_all("impostor", 0)
            except grpc.RpcError:
                copied = []
        finally:
            c.close()
        assert copied == []
        assert any("CERTIFICATE_VERIFY_FAILED" in line for line in replica.log), list(replica.log)[-10:]
    finally:
        if replica is not None:
            replica.kill()
        primary.kill()
