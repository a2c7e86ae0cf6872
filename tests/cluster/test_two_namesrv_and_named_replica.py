"""Two name servers side by side, and a replica that finds its primary by broker name (and is listed under it)."""

from __future__ import annotations

import time

import grpc
from broker_process import BrokerProcess, NameServerProcess
from conftest import BROKER_TIMEOUT_S, Cluster
from mqwire import Conn, message
from waiting import wait_for

from rockmq.protocol import namesrv, namesrv_grpc

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}


def test_brokers_register_with_every_name_server_and_survive_losing_one(tmp_path):
    ns = [NameServerProcess("--broker-timeout", str(BROKER_TIMEOUT_S)).start() for _ in range(2)]
    both = ",".join(n.endpoint for n in ns)
    brokers = {n: BrokerProcess(tmp_path / n, "--broker-name", n, "--namesrv", both, env=ENV).start() for n in ("b1", "b2")}
    try:
        for n in ns:
            Cluster(n, brokers).wait_for_brokers({"b1", "b2"})
        brokers["b1"].cli("topic", "create", "t2", "--queues", "4", check=True)
        ns[0].kill()  # the first name server a broker asks is gone: the second answers
        conn = Conn(brokers["b2"].endpoint)
        try:
            wait_for(lambda: sorted({q.broker.name for q in conn.query_route("t2").message_queues}) == ["b1", "b2"],
                       15, what="routes naming both brokers with one name server down")
        finally:
            conn.close()
    finally:
        for b in brokers.values():
            b.kill()
        for n in ns:
            n.kill()


def test_replica_of_a_broker_name(tmp_path):
    ns = NameServerProcess("--broker-timeout", str(BROKER_TIMEOUT_S)).start()
    primary = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, "--replication", "async",
                            env=ENV).start()
    replica = BrokerProcess(tmp_path / "b1-replica", "--broker-name", "b1", "--replica-of", "b1",
                            "--namesrv", ns.endpoint, env=ENV).start()
    cluster = Cluster(ns, {"b1": primary})
    try:
        cluster.wait_for_brokers({"b1"})
        conn = Conn(primary.endpoint)
        try:
            conn.create_topic("named", queues=1)
            sent = {e.message_id for e in conn.send_ok(*(message("named", f"n{i}") for i in range(10)))}
        finally:
            conn.close()
        rconn = Conn(replica.endpoint)

        def caught_up() -> bool:
            try:
                return {m.system_properties.message_id for m in rconn.pull_all("named", 0)} == sent
            except Exception:  # noqa: BLE001 - the topic reaches the replica with the first batches
                return False

        try:
            wait_for(caught_up, 15, what="the replica of b1 to catch up")
        finally:
            rconn.close()
        time.sleep(1.0)  # several registration intervals: a replica must not have registered as b1
        with grpc.insecure_channel(ns.endpoint) as ch:
            listed = namesrv_grpc.NameServerStub(ch).ListBrokers(namesrv.ListBrokersRequest(), timeout=5).brokers
        assert [(b.name, b.endpoint) for b in listed] == [("b1", primary.endpoint)]
        # ... but b1 registers it as its replica, by the endpoint it names itself with
        assert [r.endpoint for r in listed[0].replicas] == [replica.endpoint]
        shown = primary.cli("cluster", "list", check=True).stdout
        assert [ln.split()[:3] for ln in shown.split("REPLICA", 1)[1].splitlines()[1:2]] == [[replica.endpoint, "b1", "0"]]
    finally:
        replica.kill()
        primary.kill()
        ns.kill()
