"""The `Coordinator` seam on a real etcd (broker/coordination/etcd.py; the `etcd` fixture starts one on
loopback ports): members campaign for their group's primary with the next epoch, see the winner, elect
again when its lease lapses, keep the in-sync set by compare-and-set, and get one retriable error when
etcd is gone."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest

from rockmq.broker.coordination.coordinator import (
    CoordinatorError,
    CoordinatorUnavailable,
    GroupKeys,
    InSync,
    Member,
    Primary,
)
from rockmq.broker.coordination.etcd import EtcdCoordinator
from rockmq.broker.coordination.in_sync import InSyncKeeper
from rockmq.broker.coordination.membership import Membership
from rockmq.config import coordinator_endpoints
from rockmq.protocol.errors import BrokerError

LEASE_S = 2  # the shortest lease settings allow: lapses are waited for
GROUP = "broker-a"


@asynccontextmanager
async def members(url: str, *names: str, group: str = GROUP) -> AsyncIterator[list[EtcdCoordinator]]:
    """Registered members (endpoint: their name), closed after."""
    group_members = [EtcdCoordinator(coordinator_endpoints(url), group, n, LEASE_S) for n in names]
    try:
        for m, n in zip(group_members, names):
            await m.register(n)
        yield group_members
    finally:
        for m in group_members:
            await m.close()


def test_one_of_two_campaigning_members_wins_with_the_next_epoch(etcd):
    async def run() -> None:
        async with members(etcd.url, "a", "b") as (a, b):
            assert await a.primary() is None
            won_a, won_b = await asyncio.gather(a.campaign("a"), b.campaign("b"))
            assert won_a == won_b and won_a is not None and won_a.epoch == 1  # one winner, both see it
            winner, loser = (a, b) if won_a.member == "a" else (b, a)
            other = "b" if won_a.member == "a" else "a"
            assert await loser.primary() == won_a
            assert await loser.watch_primary(None, 1.0) == won_a  # known to differ: answered at once
            await winner.resign()
            assert await loser.campaign(other) == Primary(other, other, 2)
            assert await winner.campaign(won_a.member) == Primary(other, other, 2)  # the holder, unchanged
        async with members(etcd.url, "c", group="broker-b") as (c,):  # each group has its own primary and epochs
            assert await c.campaign("c") == Primary("c", "c", 1)

    asyncio.run(run())


def test_a_watching_member_sees_the_primary_as_it_changes(etcd):
    async def run() -> None:
        async with members(etcd.url, "a", "b") as (a, b):
            watching = asyncio.create_task(b.watch_primary(None, 5.0))
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            won = await a.campaign("a")
            assert await watching == won == Primary("a", "a", 1)
            assert time.monotonic() - t0 < 1.0
            assert await b.watch_primary(won, 0.3) == won  # nothing changed: as it is after the timeout
            watching = asyncio.create_task(b.watch_primary(won, 5.0))
            await asyncio.sleep(0.2)
            await a.resign()
            assert await watching is None

    asyncio.run(run())


def test_a_killed_primarys_lease_lapses_and_the_next_campaign_takes_the_next_epoch(etcd, tmp_path: Path):
    member = Path(__file__).with_name("coordinator_member.py")
    proc = subprocess.Popen([sys.executable, str(member), etcd.url, GROUP, "a", "127.0.0.1:1", str(LEASE_S)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = Primary.decode(proc.stdout.readline().encode())
        assert first == Primary("a", "127.0.0.1:1", 1)

        async def run() -> tuple[Primary | None, float]:
            async with members(etcd.url, "b") as (b,):
                assert await b.campaign("b") == first  # a holds it: b sees a
                await asyncio.sleep(LEASE_S + 0.5)
                assert await b.primary() == first  # a keeps renewing its lease
                proc.kill()
                t0 = time.monotonic()
                assert await b.watch_primary(first, LEASE_S + 3.0) is None
                lapsed = time.monotonic() - t0
                return await b.campaign("b"), lapsed

        second, lapsed = asyncio.run(run())
        assert second == Primary("b", "b", 2)
        assert lapsed <= LEASE_S + 1.0
    finally:
        proc.kill()
        proc.wait(10)


def test_members_announce_their_positions_and_a_closed_one_is_gone(etcd):
    async def run() -> None:
        async with members(etcd.url, "a", "b") as (a, b):
            assert await a.members() == {"a": Member("a"), "b": Member("b")}  # registered, not announced
            await a.announce("a", 2, 90)
            await b.announce("b", 2, 120)
            assert await b.members() == {"a": Member("a", 2, 90), "b": Member("b", 2, 120)}
            await b.close()
            assert await a.members() == {"a": Member("a", 2, 90)}  # its lease revoked: its key went

    asyncio.run(run())


def test_the_in_sync_set_changes_only_from_the_version_read_and_by_the_primary(etcd):
    async def run() -> None:
        async with members(etcd.url, "a", "b") as (a, b):
            assert await a.in_sync() == InSync(frozenset(), 0)
            assert not await a.set_in_sync(frozenset({"a"}), 0)  # not the primary (yet)
            assert await a.campaign("a") == Primary("a", "a", 1)
            assert await a.campaign("a") == Primary("a", "a", 1)  # the holder again (an answer lost): no new epoch
            assert await a.set_in_sync(frozenset({"a", "b"}), 0)
            assert not await a.set_in_sync(frozenset({"a"}), 0)  # a stale version: refused, nothing written
            assert await b.in_sync() == InSync(frozenset({"a", "b"}), 1)
            assert not await b.set_in_sync(frozenset({"b"}), 1)  # b is not the primary
            assert await a.set_in_sync(frozenset({"a"}), 1)
            await a.resign()
            assert not await a.set_in_sync(frozenset({"a", "b"}), 2)  # no longer the primary
            # b read the set while it still held b: the set changed since, so b may not campaign on it
            assert await b.campaign("b", eligible=InSync(frozenset({"a", "b"}), 1)) is None
            now = await b.in_sync()
            assert await b.campaign("b", eligible=now) == Primary("b", "b", 2)

    asyncio.run(run())


def test_a_joining_replica_is_waited_for_until_etcd_holds_it_and_the_primarys_copy_never_parts_from_etcd(etcd):
    async def run() -> None:
        async with members(etcd.url, "a") as (a,):
            assert await a.campaign("a") == Primary("a", "a", 1)
            keeper = InSyncKeeper(a, "a", 1.0)
            await keeper.load()
            assert keeper.members == frozenset({"a"})  # the primary is in its set
            # a write that landed though its answer was lost: the copy here still names the version before it
            assert await a.set_in_sync(frozenset({"a", "b"}), keeper.version)
            keeper.joining["b"] = 5
            await keeper._admit("b")  # its compare fails; read back, the set is the one it wrote: adopted
            assert keeper.members == frozenset({"a", "b"}) and not keeper.joining
            assert keeper.version == (await a.in_sync()).version
            keeper.joining["c"] = 7
            etcd.kill()
            await keeper._admit("c")  # not taken: c stays joining, so every answer still waits for it
            assert keeper.joining == {"c": 7}
            assert keeper.lacking(8, {"b": 8, "c": 7}) == frozenset({"c"})  # the primary holds it
            with pytest.raises(BrokerError, match="cannot change now"):
                await keeper.drop(frozenset({"b"}))  # not taken either: b stays a member, waited for
            assert keeper.members == frozenset({"a", "b"})
            etcd.start()
            await keeper.drop(frozenset({"b"}))  # the coordinator back: changes go through from the same copy
            assert await a.in_sync() == InSync(frozenset({"a"}), keeper.version)

    asyncio.run(run())


def test_with_etcd_gone_each_call_raises_the_retriable_error_within_its_timeout(etcd):
    async def run() -> None:
        async with members(etcd.url, "a") as (a,):
            assert await a.campaign("a") == Primary("a", "a", 1)
            valid_until = a.lease_valid_until()
            assert valid_until > time.monotonic()
            etcd.kill()
            for call in (a.primary(), a.in_sync(), a.campaign("a"), a.set_in_sync(frozenset({"a"}), 0),
                         a.watch_primary(None, 5.0)):
                t0 = time.monotonic()
                with pytest.raises(CoordinatorUnavailable, match="did not answer|failed"):
                    await call
                assert time.monotonic() - t0 <= LEASE_S / 3 + 1.0  # its timeout, and slack for a loaded machine
            await asyncio.sleep(LEASE_S / 3 + 0.2)
            assert a.lease_valid_until() == valid_until  # no renewal answered: the lease is not extended
            etcd.start()  # back on its ports with its data: the group's keys are there
            assert await a.in_sync() == InSync(frozenset(), 0)
            assert (await a.primary()) in (Primary("a", "a", 1), None)  # None if the lease lapsed meanwhile

    asyncio.run(run())


@pytest.mark.parametrize(("value", "says"), [
    ("http://127.0.0.1:2379", "coordinator must be etcd://HOST:PORT"),
    ("etcd://", "'' is not HOST:PORT"),
    ("etcd://127.0.0.1", "'127.0.0.1' is not HOST:PORT"),
    ("etcd://:2379", "':2379' is not HOST:PORT"),
])
def test_rockmq_serve_refuses_a_bad_coordinator_in_one_line(tmp_path: Path, value: str, says: str):
    done = subprocess.run([sys.executable, "-m", "rockmq", "serve", "--data-dir", str(tmp_path), "--coordinator", value],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_a_primary_whose_lease_etcd_dropped_holds_nothing_and_registers_again(etcd):
    """What a primary paused past its lease finds when it runs again: etcd expired its lease (here:
    revoked, the same for etcd) — its next renewal says so, and it neither is primary nor keeps the set."""
    from etcd3aio.kv import KVService
    from etcd3aio.lease import LeaseService

    async def run() -> None:
        async with members(etcd.url, "a") as (a,):
            assert await a.campaign("a") == Primary("a", "a", 1)
            async with grpc.aio.insecure_channel(etcd.endpoint) as channel:
                read = await KVService(channel).get(GroupKeys(GROUP).primary, timeout=5)
                await LeaseService(channel).revoke(read.kvs[0].lease, timeout=5)
            t0 = time.monotonic()
            while a.lease_valid_until() and time.monotonic() - t0 < LEASE_S:
                await asyncio.sleep(0.05)
            assert a.lease_valid_until() == 0.0  # within a renewal (a third of the lease)
            assert await a.primary() is None
            assert not await a.set_in_sync(frozenset({"a"}), 0)
            with pytest.raises(CoordinatorError, match="register first"):
                await a.campaign("a")
            await a.register("a")
            assert await a.campaign("a") == Primary("a", "a", 2)

    asyncio.run(run())


async def _until(condition: Callable[[], bool], timeout_s: float) -> float:
    """Seconds until `condition` holds (asserting it does within `timeout_s`)."""
    t0 = time.monotonic()
    while not condition():
        assert time.monotonic() - t0 < timeout_s, "not within the time allowed"
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


def _member_a(url: str) -> Membership:
    return Membership(EtcdCoordinator(coordinator_endpoints(url), GROUP, "a", LEASE_S), "a")


@asynccontextmanager
async def _primary_following(url: str) -> AsyncIterator[tuple[Membership, asyncio.Task[None]]]:
    """Member a, elected primary (epoch 1), its membership loop running; after: stopped, closed."""
    membership = _member_a(url)
    following: asyncio.Task[None] | None = None
    try:
        assert await membership.join(lambda: (0, 0)) == Primary("a", "a", 1)
        following = asyncio.create_task(membership.run(lambda: (1, 0)))
        yield membership, following
    finally:
        if following is not None:
            following.cancel()
        await membership.close()


async def _reelected(membership: Membership, following: asyncio.Task[None]) -> None:
    """Member a primary again at the next epoch, under its lease, its loop still running."""
    await _until(lambda: membership.mine and membership.primary == Primary("a", "a", 2), LEASE_S * 5)
    assert not following.done()


def test_a_member_restarted_under_its_name_is_not_primary_under_its_earlier_runs_lease(etcd):
    """A fast restart: the primary key still names the member, under the lease of the run that was
    killed. The new run waits for that key to lapse and is elected under its own lease."""
    member = Path(__file__).with_name("coordinator_member.py")
    proc = subprocess.Popen([sys.executable, str(member), etcd.url, GROUP, "a", "a", str(LEASE_S)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert Primary.decode(proc.stdout.readline().encode()) == Primary("a", "a", 1)
        proc.kill()

        async def run() -> None:
            membership = _member_a(etcd.url)
            try:
                t0 = time.monotonic()
                assert await membership.join(lambda: (1, 0)) == Primary("a", "a", 2)
                assert membership.mine and membership.writable_until() > time.monotonic()
                assert time.monotonic() - t0 > 0.5  # it waited for the old key to lapse
            finally:
                await membership.close()

        asyncio.run(run())
    finally:
        proc.kill()
        proc.wait(10)


def test_a_campaign_on_a_fresh_etcd_takes_an_epoch_above_the_one_a_members_store_holds(etcd):
    async def run() -> None:
        membership = _member_a(etcd.url)
        try:
            assert await membership.join(lambda: (7, 10)) == Primary("a", "a", 8)  # not 1: epochs never go back
        finally:
            await membership.close()

    asyncio.run(run())


def test_a_primary_whose_renewal_fails_unforeseen_stops_writing_at_once_and_is_elected_again(etcd):
    """The keep-alive and the membership loop are supervised: something that is not etcd answering on
    its port (every call UNIMPLEMENTED) ends the renewals; the lease is taken as lost at once (the
    primary refuses writes), the loop goes on, and once etcd is back the member registers on a new
    connection and is elected again (its old key lapsed) under its new lease."""
    async def run() -> None:
        async with _primary_following(etcd.url) as (membership, following):
            etcd.kill()
            impostor = grpc.aio.server()
            impostor.add_insecure_port(etcd.endpoint)
            await impostor.start()
            await _until(lambda: membership.coordinator.lease_valid_until() == 0.0, LEASE_S / 3 + 1.5)
            assert membership.writable_until() <= time.monotonic()
            await impostor.stop(None)
            etcd.start()
            await _reelected(membership, following)

    asyncio.run(run())


def test_the_membership_loop_outlives_a_primary_key_it_cannot_read_and_elects_once_it_is_gone(etcd):
    """Supervised: a primary key written by hand that does not decode as one (a JSON list) fails the
    loop's turns, each said in one line; the loop goes on, and once the key is deleted the group
    elects again."""
    from etcd3aio.kv import KVService

    async def run() -> None:
        async with _primary_following(etcd.url) as (membership, following), \
                grpc.aio.insecure_channel(etcd.endpoint) as channel:
            kv = KVService(channel)
            await kv.put(GroupKeys(GROUP).primary, b"[1]", timeout=5)
            await asyncio.sleep(1.5)
            assert not following.done()
            await kv.delete(GroupKeys(GROUP).primary, timeout=5)
            await _reelected(membership, following)

    asyncio.run(run())


def test_a_lagging_replica_whose_admission_may_have_landed_is_removed_from_etcd_too(etcd):
    """An admission whose answer was lost while etcd went away (it landed): the replica stays waited
    for, and when it lags the primary writes its removal out (it may be in etcd's set) before a send is
    answered without it."""
    async def run() -> None:
        async with members(etcd.url, "a") as (a,):
            assert await a.campaign("a") == Primary("a", "a", 1)
            keeper = InSyncKeeper(a, "a", 1.0)
            await keeper.load()
            keeper.joining["b"] = 5
            assert await a.set_in_sync(frozenset({"a", "b"}), keeper.version)  # the admission's write landed...
            etcd.kill()
            await keeper._admit("b")  # ...and neither its answer nor a read-back came
            assert keeper.joining == {"b": 5} and keeper.lacking(6, {"b": 5}) == frozenset({"b"})
            etcd.start()
            await keeper.drop(frozenset({"b"}))  # b lags: out of etcd's set, from the version etcd holds
            assert await a.in_sync() == InSync(frozenset({"a"}), keeper.version)
            assert keeper.members == frozenset({"a"}) and not keeper.joining

    asyncio.run(run())
