"""Long polls wake only for what can serve them (issue 20 §2.3): a send to a queue wakes the pulls
of that queue and the POP receives whose tag filter its tag matches, not every poll of the topic.

Counted, not timed: `Arrivals.woken` counts the polls that ended a wait on an arrival. The polls
are real RPCs over gRPC to the in-process broker; each ends on its own long-polling timeout.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from mqwire import message
from waiting import wait_for

from rockmq.protocol import pb

POLL_S = 1.5  # how long a parked poll waits (the harness's max_long_polling_s is 2 s)
SETTLE_S = 0.3  # for the parked RPCs to reach their wait


def woken(harness) -> int:
    return harness.call(lambda: harness.services.ctx.logs.arrivals.woken)


def test_a_send_wakes_only_the_pulls_of_its_queue(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=4)
    with ThreadPoolExecutor(10) as pool:
        others = [pool.submit(harness.conn.pull, group, topic, q, 0, poll_s=POLL_S) for q in (1, 2, 3) for _ in range(3)]
        mine = pool.submit(harness.conn.pull, group, topic, 0, 0, poll_s=POLL_S)
        time.sleep(SETTLE_S)
        before = woken(harness)
        harness.conn.send_ok(message(topic, "to queue 0"))  # a new topic's first message goes to queue 0
        code, got, next_offset = mine.result()
        assert code == pb.OK and [m.body for m in got] == [b"to queue 0"] and next_offset == 1
        assert woken(harness) - before <= 1  # the pull of queue 0; none of the 9 on queues 1..3
        started = time.monotonic()
        assert all(f.result()[1] == [] for f in others)  # each ended on its timeout, with nothing
        assert time.monotonic() - started < POLL_S + 1
    assert woken(harness) - before <= 1


def test_a_send_wakes_only_the_receives_whose_tags_it_carries(harness, unique):
    topic = unique("t")
    harness.conn.create_topic(topic, queues=2)
    wanted, other, anything, sql = unique("a"), unique("b"), unique("c"), unique("d")
    with ThreadPoolExecutor(8) as pool:
        polls = {
            other: [pool.submit(harness.conn.receive, other, topic, tag="blue", poll_s=POLL_S) for _ in range(4)],
            wanted: [pool.submit(harness.conn.receive, wanted, topic, tag="red||green", poll_s=POLL_S)],
            anything: [pool.submit(harness.conn.receive, anything, topic, poll_s=POLL_S)],
            sql: [pool.submit(harness.conn.receive, sql, topic, sql="TRUE", poll_s=POLL_S)],
        }
        wait_for(lambda: harness.waiting_receives() == 7, what="7 receives parked")
        before = woken(harness)
        harness.conn.send_ok(message(topic, "red one", tag="red"))
        for group in (wanted, anything, sql):  # the tag filter that matches, `*`, and SQL92 (woken conservatively)
            assert [m.body for m in polls[group][0].result()[1]] == [b"red one"], group
        assert woken(harness) - before == 3  # not the 4 receives waiting for "blue"
        assert all(f.result()[1] == [] for f in polls[other])
    assert woken(harness) - before == 3


def test_an_arrival_between_the_empty_look_and_the_wait_still_wakes_the_poll(harness, unique):
    """A poll takes its event before it looks: a message stored after the look, before the wait, sets it."""
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    config = harness.topic(topic)
    assert config is not None
    arrivals = harness.services.ctx.logs.arrivals

    async def poll_with_a_send_in_between(take) -> bool:
        event = take()  # what a pull or a receive does first
        assert harness.services.ctx.logs.max_offset(config.id, 0) == sent  # its look: nothing new
        await asyncio.get_running_loop().run_in_executor(None, harness.conn.send_ok, message(topic, "between", tag="x"))
        return await asyncio.wait_for(event.wait(), 10)

    sent = 0
    for take in (lambda: arrivals.queue(config.id, 0), lambda: arrivals.tags(config.id, frozenset({"x"})),
                 lambda: arrivals.tags(config.id, None)):
        assert harness.run(poll_with_a_send_in_between(take))
        sent += 1
    assert harness.conn.pull(group, topic, 0, 0)[2] == sent
