"""broker/arrivals.py: which waits an arrival sets, and the bookkeeping of tag-watched topics."""

from __future__ import annotations

import asyncio

from rockmq.broker.arrivals import Arrivals


def test_an_append_sets_the_pulls_of_its_queues_and_the_receives_its_tags_match() -> None:
    a = Arrivals()
    q0, q1, other_topic = a.queue(1, 0), a.queue(1, 1), a.queue(2, 0)
    red, blue, anything = a.tags(1, frozenset({"red", "green"})), a.tags(1, frozenset({"blue"})), a.tags(1, None)
    assert a.tag_watched == {1}
    a.appended(1, [0], {"red", None})
    assert [ev.is_set() for ev in (q0, q1, other_topic, red, blue, anything)] == [True, False, False, True, False, True]
    assert a.tag_watched == {1}  # "blue" still waits
    a.appended(1, [1], {None})  # an untagged message matches only `*`
    assert q1.is_set() and not blue.is_set()
    a.appended(1, [], {"blue"})
    assert blue.is_set() and a.tag_watched == set()
    assert a.queue(1, 0) is not q0  # a set event is replaced: the next wait takes a fresh one


def test_unknown_tags_wake_every_receive_and_a_topic_wake_every_poll() -> None:
    a = Arrivals()
    blue, pull = a.tags(1, frozenset({"blue"})), a.queue(1, 3)
    a.appended(1, [0], None)
    assert blue.is_set() and not pull.is_set() and a.tag_watched == set()
    blue, anything = a.tags(1, frozenset({"blue"})), a.tags(1, None)
    a.receives(1)  # retries became visible: receives only
    assert blue.is_set() and anything.is_set() and not pull.is_set()
    receive = a.tags(1, frozenset({"x"}))
    a.topic(1)
    assert pull.is_set() and receive.is_set() and a.tag_watched == set()


def test_a_wait_ends_on_its_timeout_or_its_event_and_counts_only_the_event() -> None:
    async def scenario() -> int:
        a = Arrivals()
        await a.wait(a.queue(1, 0), 0.01)  # nothing arrives: the timeout ends it
        ev = a.queue(1, 0)
        asyncio.get_running_loop().call_soon(a.appended, 1, [0], None)
        await asyncio.wait_for(a.wait(ev, 30), 5)
        return a.woken

    assert asyncio.run(scenario()) == 1
