"""A fenced primary serves reads, also to groups it has never seen (issue 33 §5): a pull or an
assignment of a new group creates nothing there (a write it would refuse, refusing the read
with it), while a POP receive, which records its deliveries, is refused as every write is."""

from __future__ import annotations

import grpc
from broker_process import BrokerProcess, NameServerProcess
from mqwire import META, RPC_TIMEOUT, Conn, message
from waiting import wait_for

from rockmq.protocol import pb, rpc

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
TOPIC = "fenced-reads"


def _holds(endpoint: str, ids: set[str]) -> bool:
    conn = Conn(endpoint)
    try:
        return ids <= {m.system_properties.message_id for m in conn.pull_all(TOPIC, 0)}
    except (grpc.RpcError, AssertionError):
        return False
    finally:
        conn.close()


def _send_refused(endpoint: str) -> bool:
    conn = Conn(endpoint)
    try:
        return conn.send(message(TOPIC, "probe")).status.code == pb.HA_NOT_AVAILABLE
    finally:
        conn.close()


def test_a_fenced_primary_serves_reads_to_new_groups_and_stores_none(tmp_path):
    ns = NameServerProcess("--broker-timeout", "2").start()
    primary = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, "--replication", "async",
                            env=ENV).start()
    replica = BrokerProcess(tmp_path / "b1-replica", "--broker-name", "b1", "--replica-of", "b1", "--namesrv",
                            ns.endpoint, env=ENV).start()
    try:
        primary.cli("topic", "create", TOPIC, "--queues", "1", check=True)
        conn = Conn(primary.endpoint)
        try:
            sent = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(5)))}
        finally:
            conn.close()
        wait_for(lambda: _holds(replica.endpoint, sent), 15, what="the replica to hold every message")
        forced = replica.cli("broker", "promote", "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        wait_for(lambda: _send_refused(primary.endpoint), 15, what="the old primary to be fenced")

        conn = Conn(primary.endpoint)
        try:
            code, pulled, _ = conn.pull("new-puller", TOPIC, 0, 0)
            assert code == pb.OK and sent <= {m.system_properties.message_id for m in pulled}, pb.Code.Name(code)

            def assigned_to_new_primary() -> bool:
                request = rpc.QueryAssignmentRequest(topic=pb.Resource(name=TOPIC), group=pb.Resource(name="new-popper"))
                reply = conn.mq.QueryAssignment(request, metadata=META, timeout=RPC_TIMEOUT)
                assert reply.status.code == pb.OK, reply.status
                return {a.message_queue.broker.endpoints.addresses[0].port for a in reply.assignments} == {replica.port}

            wait_for(assigned_to_new_primary, 15, what="assignments on the old primary to name the new one")
            code, _ = conn.receive("new-popper", TOPIC)  # a receive records its deliveries: a write
            assert code == pb.HA_NOT_AVAILABLE, pb.Code.Name(code)
            assert not {"new-puller", "new-popper"} & set(conn.group_names())
        finally:
            conn.close()
    finally:
        replica.kill()
        primary.kill()
        ns.kill()
