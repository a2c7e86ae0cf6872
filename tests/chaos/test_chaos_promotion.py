"""Promotion is fenced by an epoch (issue 20 §3.2): `rockmq broker promote` is refused while the
primary answers; forced, the old primary (still running) refuses sends with a retriable status within
10 s, the name server routes the broker name to the new primary, and clients keep sending there —
rockmq's own and the official Python client. Without a name server the promoted replica itself tells
its former primary."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import grpc
from broker_process import BrokerProcess, NameServerProcess
from chaos_scale import FULL
from mqwire import Conn, message
from sending import OfficialSending, Sending
from waiting import wait_for

from rockmq.protocol import namesrv, namesrv_grpc, pb, replication, replication_grpc

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from official_client import producer, send  # noqa: E402

ENV = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
FENCED_WITHIN_S = 10  # the bound: an old primary refuses writes this soon after a promotion
TOPIC = "fenced"


def _refused_status(endpoint: str) -> pb.Status | None:
    """The status a send to `endpoint` gets, if it is refused (None: stored)."""
    conn = Conn(endpoint)
    try:
        st = conn.send(message(TOPIC, "probe")).status
        return None if st.code == pb.OK else st
    finally:
        conn.close()


def _registered(ns: NameServerProcess) -> dict[str, str]:
    with grpc.insecure_channel(ns.endpoint) as ch:
        listed = namesrv_grpc.NameServerStub(ch).ListBrokers(namesrv.ListBrokersRequest(), timeout=5).brokers
    return {b.name: b.endpoint for b in listed}


def _wait_following(primary: BrokerProcess, replica: BrokerProcess, body: str) -> str:
    """Send `body` to the primary and wait until the replica holds it; -> its message id."""
    conn = Conn(primary.endpoint)
    try:
        sent = conn.send_ok(message(TOPIC, body))[0].message_id
    finally:
        conn.close()
    rconn = Conn(replica.endpoint)

    def holds() -> bool:
        try:
            return sent in {m.system_properties.message_id for q in range(2) for m in rconn.pull_all(TOPIC, q)}
        except (grpc.RpcError, AssertionError):
            return False

    try:
        wait_for(holds, 15, what=f"the replica to hold {body!r}")
    finally:
        rconn.close()
    return sent


def test_promotion_is_refused_while_the_primary_answers_and_forced_fences_it(tmp_path):
    ns = NameServerProcess("--broker-timeout", "2").start()
    primary = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, "--replication", "async",
                            env=ENV).start()
    replica = BrokerProcess(tmp_path / "b1-replica", "--broker-name", "b1", "--replica-of", "b1", "--namesrv", ns.endpoint,
                            env=ENV).start()
    sending: Sending | None = None
    official: OfficialSending | None = None
    try:
        primary.cli("topic", "create", TOPIC, "--queues", "2", check=True)
        _wait_following(primary, replica, "before")

        refused = replica.cli("broker", "promote")
        assert refused.returncode != 0, refused.stdout + refused.stderr
        said = [line for line in refused.stderr.splitlines() if line.startswith("rockmq:")]
        assert len(said) == 1 and "--force" in said[0], refused.stderr
        assert "Traceback" not in refused.stderr
        # Nothing changed: the primary takes sends, the replica still follows it and refuses writes.
        _wait_following(primary, replica, "after the refusal")
        rconn = Conn(replica.endpoint)
        try:
            try:
                rconn.send(message(TOPIC, "no"))
                raise AssertionError("the replica took a send after a refused promotion")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.FAILED_PRECONDITION and "replica of" in (e.details() or "")
        finally:
            rconn.close()

        sending = Sending(primary.endpoint, TOPIC)
        wait_for(lambda: len(sending.acked) >= 5, 15, what="rockmq's producer sending to the primary")
        official = OfficialSending(primary.endpoint, TOPIC) if FULL else None
        forced = replica.cli("broker", "promote", "--force")
        promoted_at = time.monotonic()
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert "forced" in forced.stdout and "lost" in forced.stdout, forced.stdout

        st = wait_for(lambda: _refused_status(primary.endpoint), FENCED_WITHIN_S,
                      what="the old primary to refuse sends")
        assert st.code == pb.HA_NOT_AVAILABLE and "no longer the primary" in st.message, st
        print(f"old primary refuses sends {time.monotonic() - promoted_at:.2f} s after the forced promotion")
        wait_for(lambda: _registered(ns).get("b1") == replica.endpoint, FENCED_WITHIN_S,
                 what="the name server to route b1 to the promoted replica")
        conn = Conn(primary.endpoint)  # the old primary answers routes with the new one
        try:
            route = conn.query_route(TOPIC)
            assert {q.broker.endpoints.addresses[0].port for q in route.message_queues} == {replica.port}, route
        finally:
            conn.close()

        # rockmq's producer, still pointed at the old primary, sends to the new one.
        try:
            wait_for(lambda: len([a for a in sending.acked if a[0] > promoted_at + 0.5]) >= 5, FENCED_WITHIN_S + 5,
                     what="rockmq's producer to send to the new primary")
        except AssertionError as e:
            raise AssertionError(f"{e}; last failures: {sending.failed[-3:]}, {len(sending.failed)} in all") from None
        sending.stop()
        print(f"rockmq's producer: {len(sending.failed)} of {len(sending.acked) + len(sending.failed)} sends failed "
              f"across the promotion")
        later = {mid for at, mid in sending.acked if at > promoted_at + FENCED_WITHIN_S}
        new_conn = Conn(replica.endpoint)
        try:
            on_new = {m.system_properties.message_id for q in range(2) for m in new_conn.pull_all(TOPIC, q)}
        finally:
            new_conn.close()
        assert later <= on_new, f"{len(later - on_new)} sends acknowledged after the fence are not on the new primary"

        if official is not None:  # started before the promotion: it moves at its next route refresh (every 30 s)
            wait_for(lambda: len([a for a in official.acked if a[0] > promoted_at + 0.5]) >= 5, 60,
                     what="the official producer started before the promotion to send to the new primary")
            moved = next(at for at, _ in official.acked if at > promoted_at + 0.5) - promoted_at
            print(f"official producer sends to the new primary {moved:.1f} s after the promotion "
                  f"({official.failed} sends failed meanwhile)")
            official.stop()
        # The official Python client, given the old primary as its access point, sends to the new one.
        with producer(primary.endpoint, TOPIC) as p:
            ids = {send(p, TOPIC, f"official-{i}".encode()).message_id for i in range(5)}
        new_conn = Conn(replica.endpoint)
        try:
            on_new = {m.system_properties.message_id for q in range(2) for m in new_conn.pull_all(TOPIC, q)}
        finally:
            new_conn.close()
        assert ids <= on_new
        assert not any("Traceback" in line for line in [*primary.log, *replica.log]), "\n".join([*primary.log, *replica.log])
    finally:
        for running in (sending, official):
            if running is not None:
                running.stop()
        replica.kill()
        primary.kill()
        ns.kill()


def test_without_a_name_server_the_promoted_replica_fences_its_former_primary(tmp_path):
    """No name server: the promoted replica tells its former primary on a Follow stream; the old
    primary stays fenced across a restart (until re-seeded), and says so in one line."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    try:
        primary.cli("topic", "create", TOPIC, "--queues", "2", check=True)
        _wait_following(primary, replica, "before")
        with grpc.insecure_channel(primary.endpoint) as ch:  # a higher epoch without the replica's proof fences nothing
            try:
                list(replication_grpc.ReplicationStub(ch).Follow(iter([replication.FollowerState(epoch=7)]), timeout=5))
                raise AssertionError("a Follow stream claiming epoch 7 without proof was served")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.PERMISSION_DENIED, e
        assert _refused_status(primary.endpoint) is None, "an unproven epoch fenced the primary"
        forced = replica.cli("broker", "promote", "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        st = wait_for(lambda: _refused_status(primary.endpoint), FENCED_WITHIN_S, what="the old primary to refuse sends")
        assert st.code == pb.HA_NOT_AVAILABLE, st
        assert _refused_status(replica.endpoint) is None, "the promoted replica refuses sends"
        primary.restart()
        st = _refused_status(primary.endpoint)
        assert st is not None and st.code == pb.HA_NOT_AVAILABLE, f"the old primary takes writes again after a restart: {st}"
        assert any("superseded by a promoted replica" in line for line in primary.log), "\n".join(primary.log)
        assert not any("Traceback" in line for line in [*primary.log, *replica.log]), "\n".join([*primary.log, *replica.log])
    finally:
        replica.kill()
        primary.kill()


def _forge_registration(ns: NameServerProcess) -> None:
    """The attack of issue 32 §3: one anonymous Register of b1 at an epoch far above its own, as
    anyone who reaches an open name server can send it (no proof of the epoch)."""
    forged = namesrv.BrokerInfo(name="b1", endpoint="127.0.0.1:1", epoch=10**6)
    forged.topics.add(topic=TOPIC, queue_count=2)
    with grpc.insecure_channel(ns.endpoint) as ch:
        namesrv_grpc.NameServerStub(ch).Register(namesrv.RegisterRequest(broker=forged), timeout=5)


def _routes_itself(primary: BrokerProcess) -> None:
    conn = Conn(primary.endpoint)
    try:
        assert {q.broker.endpoints.addresses[0].port for q in conn.query_route(TOPIC).message_queues} == {primary.port}
    finally:
        conn.close()


def _said_once(log: list[str], what: str) -> None:
    said = [line for line in log if what in line]
    assert len(said) == 1, "\n".join(log)


def test_a_forged_registration_at_a_higher_epoch_fences_nothing(tmp_path):
    """A stranger's registration of the primary's name at a higher epoch, without the proof only its
    replicas can give: the name server keeps the primary's registration (logged once), the primary
    keeps taking sends and routing to itself, and after a restart too. A real promotion, which
    carries the proof, still fences (test_promotion_is_refused_while_the_primary_answers_and_forced_fences_it)."""
    ns = NameServerProcess("--broker-timeout", "60").start()
    primary = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, env=ENV).start()
    try:
        primary.cli("topic", "create", TOPIC, "--queues", "2", check=True)
        wait_for(lambda: _registered(ns).get("b1") == primary.endpoint, 15, what="b1 registered")
        for _ in range(2):
            _forge_registration(ns)
        time.sleep(10 * float(ENV["ROCKMQ_NAMESRV_INTERVAL_S"]))  # many registrations and their replies later
        assert _refused_status(primary.endpoint) is None, "a forged registration fenced the primary"
        assert _registered(ns)["b1"] == primary.endpoint, "a forged registration took the primary's routes"
        _routes_itself(primary)
        _said_once(list(ns.log), "without the proof")
        primary.restart()
        assert _refused_status(primary.endpoint) is None, "the primary is fenced after a restart"
        assert not any("Traceback" in line for line in [*primary.log, *ns.log])
    finally:
        primary.kill()
        ns.kill()


def test_a_forged_epoch_a_name_server_hands_back_fences_nothing(tmp_path):
    """The forged registration reaches the name server first (a name nobody holds is anyone's): the
    primary hears the forged epoch in its registration replies, finds no proof, says so once, and
    goes on taking sends and routing clients to itself."""
    ns = NameServerProcess("--broker-timeout", "60").start()
    try:
        _forge_registration(ns)
        primary = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, env=ENV).start()
        try:
            primary.cli("topic", "create", TOPIC, "--queues", "2", check=True)
            time.sleep(10 * float(ENV["ROCKMQ_NAMESRV_INTERVAL_S"]))
            assert _refused_status(primary.endpoint) is None, "a forged epoch handed back fenced the primary"
            _routes_itself(primary)
            _said_once(list(primary.log), "without the proof")
        finally:
            primary.kill()
    finally:
        ns.kill()


def test_an_old_primary_back_after_its_promoted_replica_restarted_is_fenced(tmp_path):
    """No name server, the primary down when its replica is promoted, and the promoted replica
    restarted before the old primary comes back: the old primary, started again, still learns the
    new epoch (the promoted replica keeps telling it across restarts) and refuses writes."""
    primary = BrokerProcess(tmp_path / "primary", "--replication", "async", "--broker-name", "b1").start()
    replica = BrokerProcess(tmp_path / "replica", "--replica-of", primary.endpoint, "--broker-name", "b1").start()
    try:
        primary.cli("topic", "create", TOPIC, "--queues", "2", check=True)
        _wait_following(primary, replica, "before")
        primary.stop()
        promoted = replica.cli("broker", "promote")
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr

        def takes_sends() -> bool:
            try:
                return _refused_status(replica.endpoint) is None
            except grpc.RpcError:  # a replica until the promotion took effect
                return False

        wait_for(takes_sends, 15, what="the promoted replica to take sends")
        replica.restart()
        primary.start()
        started_at = time.monotonic()
        st = wait_for(lambda: _refused_status(primary.endpoint), FENCED_WITHIN_S, what="the old primary to refuse sends")
        assert st.code == pb.HA_NOT_AVAILABLE, st
        print(f"the old primary, started again, refuses sends {time.monotonic() - started_at:.2f} s after its start")
        assert not any("Traceback" in line for line in [*primary.log, *replica.log]), "\n".join([*primary.log, *replica.log])
    finally:
        replica.kill()
        primary.kill()
