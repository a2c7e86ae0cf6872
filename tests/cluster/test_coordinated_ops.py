"""Operating a coordinated group (issue 30 §3, §5; src/rockmq/cli/coordinated.py) on a real etcd and
real broker processes: `rockmq broker group` before and after a failover; a lagging replica is not
elected until `rockmq broker elect --unclean` makes it primary, saying first what it lacks; with
etcd stopped past the lease the primary goes on serving (sync replication, replicas in its in-sync
set: membership.py `rides_out`), and with etcd back the group serves and elects again."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import grpc
from coordinated_group import LEASE_S, in_sync_joined, lagging_behind, running_group, serving_primary, strand
from group_cli import group_command, group_state, send_code
from mqwire import Conn, held_ids, message
from waiting import wait_for

from rockmq.protocol import pb

TOPIC, QUEUES = "ops", 4
REPORT_S = 1.0  # the primary reports its group's lags this often (broker/coordination/status.py)
OUTAGE_S = LEASE_S * 2


def _members(state: dict) -> dict[str, dict]:
    return {m["member"]: m for m in state["members"]}


def test_broker_group_shows_members_primary_epoch_in_sync_set_and_lags_before_and_after_a_failover(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        conn = Conn(primary.endpoint)
        conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(10)))
        conn.close()
        replicas = {m.endpoint for m in members if m is not primary}

        def caught_up() -> dict | None:
            state = group_state(etcd.url)
            rows = _members(state)
            return state if all(rows[r]["behind_messages"] == 0 and rows[r]["applied"] == rows[primary.endpoint]["applied"]
                                for r in replicas) else None

        before = wait_for(caught_up, 10, 0.2, what="the primary to report its replicas caught up")
        rows = _members(before)
        assert before["primary"]["member"] == primary.endpoint and before["epoch"] == before["primary"]["epoch"] >= 1
        assert set(rows) == {m.endpoint for m in members} and all(r["up"] for r in rows.values())
        assert rows[primary.endpoint]["role"] == "primary" and {rows[r]["role"] for r in replicas} == {"replica"}
        assert replicas <= set(before["in_sync"]) and before["report"]["member"] == primary.endpoint
        assert rows[primary.endpoint]["applied"] > 0 and {rows[r]["behind_ms"] for r in replicas} == {0}

        shown = group_command(etcd.url, "group", "g1")  # the table: a head line, a header, a row per member, the report's age
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0] == (f"group g1: primary {primary.endpoint} at epoch {before['epoch']}; in-sync set "
                            f"{before['in_sync']}"), lines
        assert lines[1].split() == ["MEMBER", "ROLE", "UP", "IN_SYNC", "APPLIED", "BEHIND_MSGS", "BEHIND_MS"]
        assert lines[2 + sorted(rows).index(primary.endpoint)].split()[:3] == [primary.endpoint, "primary", "yes"]
        assert re.fullmatch(rf"lags as {re.escape(primary.endpoint)} \(epoch {before['epoch']}\) reported them [\d.]+ s ago",
                            lines[-1]), lines[-1]

        primary.kill()
        new = serving_primary([m for m in members if m is not primary])
        after = wait_for(lambda: (s := group_state(etcd.url))["report"]["member"] == new.endpoint and s, 10, 0.2,
                         what="the new primary's first report")
        rows = _members(after)
        assert after["primary"]["member"] == new.endpoint and after["epoch"] == before["epoch"] + 1
        assert not rows[primary.endpoint]["up"] and rows[primary.endpoint]["role"] is None
        assert rows[new.endpoint]["role"] == "primary" and primary.endpoint not in after["in_sync"]


def test_broker_group_without_a_coordinator_or_for_an_unknown_group_says_so_in_one_line(etcd):
    unknown = group_command(etcd.url, "group", "nosuch")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == ("rockmq: no coordinated group 'nosuch' in etcd: no member registered, none ever elected "
                              "(its members' --broker-name?)\n")
    import subprocess
    import sys

    bare = subprocess.run([sys.executable, "-m", "rockmq", "broker", "group", "g1"], capture_output=True, text=True,
                          timeout=30, env={"PATH": "/usr/bin", "PYTHONPATH": ":".join(sys.path)})
    assert bare.returncode == 2 and len(bare.stderr.splitlines()) == 1 and "give --coordinator" in bare.stderr
    asyncio.run(_put(etcd.endpoint, "/rockmq/groups/bad/status", b"{written by hand"))
    bad = group_command(etcd.url, "group", "bad")
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1 and "does not decode" in bad.stderr, bad.stderr


async def _put(endpoint: str, key: str, value: bytes) -> None:
    from etcd3aio.kv import KVService

    async with grpc.aio.insecure_channel(endpoint) as channel:
        await KVService(channel).put(key, value, timeout=5)


def test_a_lagging_replica_is_not_elected_until_broker_elect_unclean_makes_it_primary(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        primary, lagging, in_sync, _ = lagging_behind(members, TOPIC, QUEUES)
        time.sleep(REPORT_S * 1.5)  # the primary's report says how far behind it is
        behind = _members(group_state(etcd.url))[lagging.endpoint]
        assert not behind["in_sync"] and behind["behind_messages"] >= 20 and behind["behind_ms"] > 0, behind
        strand(primary, lagging, in_sync)
        assert send_code(Conn(lagging.endpoint), message(TOPIC, "no primary")) != pb.OK, "a write taken with no primary"

        plain = group_command(etcd.url, "elect", "g1")
        assert plain.returncode == 1 and len(plain.stderr.splitlines()) == 1
        assert "has no live member of its in-sync set" in plain.stderr and "--unclean" in plain.stderr
        declined = group_command(etcd.url, "elect", "g1", "--unclean", answer="n\n")
        assert declined.returncode == 1 and "not elected" in declined.stderr
        assert not any("took the primary role" in line for line in lagging.log)

        elected = group_command(etcd.url, "elect", "g1", "--unclean", answer="y\n")
        assert elected.returncode == 0, elected.stderr
        said = re.search(rf"{re.escape(lagging.endpoint)} lacks (\d+) messages \((\d+) ms of writes", elected.stdout)
        assert said and int(said[1]) >= 20, elected.stdout  # said before it acted
        epoch = int(re.search(r"primary of group g1 at epoch (\d+)", elected.stdout)[1])  # type: ignore[index]
        unclean = f"an unclean election (rockmq broker elect --unclean) made {lagging.endpoint} primary at epoch {epoch}"
        wait_for(lambda: any(unclean in line for line in lagging.log), 30, what="the elected member's log line")
        assert serving_primary([lagging]) is lagging
        again = group_command(etcd.url, "elect", "g1", "--unclean", "--yes")
        assert again.returncode == 1 and "has a primary" in again.stderr

        in_sync.start()  # a replica again (its tail past the lagging one's log is not the group's any more)
        conn = Conn(lagging.endpoint)
        wait_for(lambda: send_code(conn, message(TOPIC, "after")) == pb.OK, 30, 0.5,
                 what="the unclean primary to take writes")
        conn.close()
        assert len(held_ids(lagging.endpoint, TOPIC, QUEUES)) >= 1


def test_with_etcd_stopped_past_the_lease_the_primary_goes_on_taking_sends_and_receives(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        conn = Conn(primary.endpoint)
        etcd.kill()
        sent = _send_for(conn, OUTAGE_S)
        received = conn.receive_n("g-outage", TOPIC, len(sent), within=10)
        assert {m.system_properties.message_id for m in received} == sent
        conn.close()


def test_with_etcd_back_after_an_outage_the_group_serves_and_elects_again(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        primary = serving_primary(members)
        primary.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        in_sync_joined(primary)
        conn = Conn(primary.endpoint)
        acked = {e.message_id for e in conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(10)))}
        etcd.kill()
        time.sleep(OUTAGE_S)  # past the lease: nothing is elected meanwhile
        assert not any("took the primary role" in line for m in members if m is not primary for line in m.log)
        etcd.start()  # on its ports and data: the leases it kept are renewed again
        wait_for(lambda: send_code(conn, message(TOPIC, "back")) == pb.OK, LEASE_S * 5, 0.2,
                 what="the primary to take writes with etcd back")
        conn.close()
        primary.kill()
        new = serving_primary([m for m in members if m is not primary], timeout=LEASE_S * 5)
        conn = Conn(new.endpoint)
        wait_for(lambda: send_code(conn, message(TOPIC, "after")) == pb.OK, 15, 0.2, what="the new primary to take writes")
        conn.close()
        assert acked <= held_ids(new.endpoint, TOPIC, QUEUES)
        assert group_state(etcd.url)["primary"]["member"] == new.endpoint


def _send_for(conn: Conn, seconds: float) -> set[str]:
    """Sends, one every 0.1 s for `seconds`, each acknowledged -> their ids."""
    sent: set[str] = set()
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        sent |= {e.message_id for e in conn.send_ok(message(TOPIC, f"m{len(sent)}"))}
        time.sleep(0.1)
    return sent
