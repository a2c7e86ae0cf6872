"""The broker's client sessions (broker/clients.py): at most max_clients, the one silent longest goes
first, and evicting one costs the same whatever the number held (issue 20 §2.4: no scan of every
session per eviction, which made each new client past the bound cost O(max_clients))."""

from __future__ import annotations

import dataclasses
import time

import pytest

from rockmq.broker.clients import Clients
from rockmq.broker.context import BrokerContext
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.lite.topics import LiteTopics
from rockmq.broker.matches import MatchIndex
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.renew import Renewals
from rockmq.broker.subscriptions import Subscriptions
from rockmq.config import Settings
from rockmq.protocol import pb


@pytest.fixture
def ctx(tmp_path):
    c = BrokerContext.open(Settings(data_dir=str(tmp_path / "data")))
    yield c
    c.store.close()


def _clients(ctx: BrokerContext, max_clients: int) -> Clients:
    ctx.settings = dataclasses.replace(ctx.settings, max_clients=max_clients)
    s = ctx.settings
    renewals = Renewals(Checkpoints(ctx.store, ctx.secret, ctx.epoch), s.auto_renew_invisible_ms, s.client_silence_s,
                        s.max_renewals)
    return Clients(ctx, Subscriptions(ctx, MatchIndex()), renewals,
                   LiteSubscriptions(LiteTopics(ctx.store, 10), ctx.logs.arrivals, 10, 100))


def test_the_client_silent_longest_goes_first(ctx):
    clients = _clients(ctx, 3)
    for cid in ("a", "b", "c"):
        clients.heartbeat(cid, pb.SIMPLE_CONSUMER, "g", "")
    clients.touch("a")  # heard from again: now b is the one silent longest
    clients.register("d")
    assert list(clients.sessions) == ["c", "a", "d"]
    assert [s.client_id for s in clients.members("g")] == ["a", "c"]  # an evicted member leaves its group


def test_a_member_that_changes_group_or_goes_leaves_the_old_one(ctx):
    clients = _clients(ctx, 10)
    clients.heartbeat("a", pb.SIMPLE_CONSUMER, "g", "")
    clients.heartbeat("b", pb.SIMPLE_CONSUMER, "g", "")
    clients.heartbeat("a", pb.SIMPLE_CONSUMER, "h", "")
    clients.drop("b")
    assert clients.members("g") == []
    assert [s.client_id for s in clients.members("h")] == ["a"]


def _eviction_cost(ctx: BrokerContext, held: int, evictions: int) -> float:
    """CPU seconds of `evictions` new clients once `held` sessions fill the table."""
    clients = _clients(ctx, held)
    for i in range(held):
        clients.register(f"old-{i}")
    start = time.process_time()
    for i in range(evictions):
        clients.register(f"new-{i}")
    cost = time.process_time() - start
    assert len(clients.sessions) == held
    return cost


def test_evicting_a_session_does_not_scan_the_others(ctx):
    evictions = 2_000
    small = min(_eviction_cost(ctx, 1_000, evictions) for _ in range(3))
    large = min(_eviction_cost(ctx, 20_000, evictions) for _ in range(3))
    # Scanning every session per eviction made the large table's cost ~20x the small one's.
    assert large < 4 * small + 0.02, (small, large)


def test_lane_groups_are_remembered_only_while_a_session_is_in_them(ctx):
    clients = _clients(ctx, 10)
    for i in range(1_000):  # lane consumers of made-up groups, each a new client
        clients.receiving(f"c{i}", f"group-{i}", "dev")
    assert len(clients.sessions) == 10
    assert clients.live_lanes("group-999") == frozenset({"dev"})
    assert clients.live_lanes("group-0") == frozenset()
    assert len(clients._laned) == 10  # a group whose last session went is forgotten
