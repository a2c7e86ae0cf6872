"""The push consumer's parts, each alone and without a broker: a queue's cache accounting, the
fetcher's flow control, settlement (retries, send-backs, skips), commits, the rebalance's taking
and handing over, the group's members, a held POP batch's bookkeeping and the retry topic's
conventions."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from rockmq.client import AsyncPushConsumer, Call, Filter, MockTransport, Queue, ReceivedMessage
from rockmq.client.allocation import average
from rockmq.client.errors import IllegalArgument, RockmqError
from rockmq.client.pull import PullResult
from rockmq.client.push.assignment import Assignment
from rockmq.client.push.commits import Committer
from rockmq.client.push.dispatch import Dispatcher
from rockmq.client.push.fetcher import Fetcher
from rockmq.client.push.handler import HandlerRunner
from rockmq.client.push.held import Held
from rockmq.client.push.membership import Membership
from rockmq.client.push.owned import OwnedQueue
from rockmq.client.push.retries import backoff_s, presented, send_back_copy
from rockmq.client.push.settlement import Settlement
from rockmq.client.queues import queue_order
from rockmq.client.session import Session
from rockmq.protocol import admin, pb, rpc
from rockmq.protocol.conventions import ORIGIN_TOPIC, RECONSUME_TIMES

Q = Queue("orders", "b0", "127.0.0.1:9000", 0)


def _message(offset: int, body: bytes = b"x", topic: str = "orders", attempt: int = 1,
             properties: dict[str, str] | None = None) -> ReceivedMessage:
    return ReceivedMessage(topic, body, f"id{offset}", None, (), properties or {}, None, 0, offset, attempt, 0, 0,
                           f"handle{offset}", "b0", "127.0.0.1:9000")


# -- a queue's cache ---------------------------------------------------------------------------

def test_hold_and_finish_count_the_cache_and_move_the_commit_point():
    owned = OwnedQueue.at(Q, 10)
    first, second = _message(10, b"abc"), _message(11, b"de")
    owned.hold(first)
    owned.hold(second)
    owned.position = 12
    assert (owned.cached, owned.cached_bytes, owned.commit_point()) == (2, 5, 10)
    owned.finish(second)  # out of order: the commit waits for the first
    assert (owned.cached, owned.cached_bytes, owned.commit_point(), owned.space.is_set()) == (1, 3, 10, True)
    owned.finish(first)
    assert (owned.cached, owned.cached_bytes, owned.commit_point()) == (0, 0, 12)
    assert owned.stats().in_flight == 0


def test_a_message_from_before_the_queue_was_taken_again_counts_nothing():
    owned = OwnedQueue.at(Q, 10)
    owned.hold(_message(10))
    owned.window.start(11)  # taken again: the old completion is stale
    owned.finish(_message(10))
    assert (owned.cached, owned.space.is_set()) == (1, False)


# -- the fetcher: pulls within flow control ----------------------------------------------------

class FakePull:
    """Answers pulls from a list of replies (a RockmqError is raised), and records what was asked."""

    def __init__(self, *replies: PullResult | RockmqError, earliest: int = 0, latest: int = 100) -> None:
        self.replies = list(replies)
        self.asked: list[dict[str, Any]] = []
        self.ends = {"earliest": earliest, "latest": latest}

    async def pull(self, queue: Queue, offset: int, **options: Any) -> PullResult:
        self.asked.append({"offset": offset, **options})
        reply = self.replies.pop(0)
        if isinstance(reply, RockmqError):
            raise reply
        return reply

    async def offset_at(self, queue: Queue, where: str) -> int:
        return self.ends[where]


def _fetcher(pull: FakePull, dispatch: Callable[[OwnedQueue, ReceivedMessage], None], **limits: Any) -> Fetcher:
    options = {"batch_size": 32, "max_cached_messages": 1000, "max_cached_bytes": 1 << 20, **limits}
    return Fetcher(pull, dispatch, group="g", subscriptions={"orders": Filter.tag("paid")}, lane=None,
                   lane_fallback=True, poll_s=0.0, **options)


def _stop_after_dispatch(taken: list[ReceivedMessage]) -> Callable[[OwnedQueue, ReceivedMessage], None]:
    def dispatch(owned: OwnedQueue, message: ReceivedMessage) -> None:
        owned.hold(message)
        taken.append(message)
        owned.stopped = True  # one reply is all the test wants
    return dispatch


def test_a_pull_asks_for_the_room_left_and_sends_the_subscription_filter():
    taken: list[ReceivedMessage] = []
    pull = FakePull(PullResult([_message(7), _message(8)], 9))
    owned = OwnedQueue.at(Q, 7)
    owned.cached, owned.cached_bytes = 3, 100
    asyncio.run(_fetcher(pull, _stop_after_dispatch(taken), max_cached_messages=5, max_cached_bytes=1000).run(owned))
    asked = pull.asked[0]
    assert (asked["offset"], asked["max_messages"], asked["max_bytes"], asked["filter"]) == (7, 2, 900, Filter.tag("paid"))
    assert [m.offset for m in taken] == [7, 8] and owned.position == 9


def test_what_a_reply_brings_beyond_the_bytes_left_is_pulled_again():
    taken: list[ReceivedMessage] = []
    pull = FakePull(PullResult([_message(0, b"a" * 40), _message(1, b"b" * 40), _message(2, b"c" * 40)], 3))
    owned = OwnedQueue.at(Q, 0)
    asyncio.run(_fetcher(pull, _stop_after_dispatch(taken), max_cached_bytes=100).run(owned))
    assert [m.offset for m in taken] == [0, 1]
    assert (owned.position, owned.cached_bytes) == (2, 80)


def test_a_full_cache_pauses_pulling_until_a_message_finishes():
    async def scenario() -> list[dict[str, Any]]:
        pull = FakePull(PullResult([_message(1)], 2))
        owned = OwnedQueue.at(Q, 0)
        owned.hold(_message(0))
        task = asyncio.create_task(_fetcher(pull, _stop_after_dispatch([]), max_cached_messages=1).run(owned))
        await asyncio.sleep(0.05)
        assert pull.asked == []  # full: waiting for space
        owned.finish(_message(0))
        await asyncio.wait_for(task, 1.0)
        return pull.asked
    assert [a["offset"] for a in asyncio.run(scenario())] == [0]


def test_an_offset_gone_from_the_queue_resumes_at_its_earliest_message():
    gone = IllegalArgument("offset out of range", code=pb.ILLEGAL_OFFSET)
    pull = FakePull(gone, PullResult([_message(40)], 41), earliest=40)
    taken: list[ReceivedMessage] = []
    owned = OwnedQueue.at(Q, 5)
    asyncio.run(_fetcher(pull, _stop_after_dispatch(taken)).run(owned))
    assert [a["offset"] for a in pull.asked] == [5, 40] and [m.offset for m in taken] == [40]


def test_the_retry_topic_is_pulled_unfiltered_and_shown_as_its_first_topic():
    retried = _message(0, topic="%RETRY%g", properties={ORIGIN_TOPIC: "orders", RECONSUME_TIMES: "2"})
    pull = FakePull(PullResult([retried], 1))
    taken: list[ReceivedMessage] = []
    owned = OwnedQueue.at(Queue("%RETRY%g", "b0", "127.0.0.1:9000", 0), 0)
    asyncio.run(_fetcher(pull, _stop_after_dispatch(taken)).run(owned))
    assert pull.asked[0]["filter"] == Filter.tag()
    assert (taken[0].topic, taken[0].delivery_attempt, taken[0].properties) == ("orders", 3, {})


# -- dispatch and settlement -------------------------------------------------------------------

class Broker:
    """A MockTransport's handler that takes send-backs (refusing the first `refuse` of them)."""

    def __init__(self, refuse: int = 0) -> None:
        self.refuse = refuse
        self.sent: list[pb.Message] = []

    def __call__(self, call: Call) -> object:
        assert call.method == "SendMessage"
        if self.refuse:
            self.refuse -= 1
            return rpc.SendMessageResponse(status=pb.Status(code=pb.INTERNAL_SERVER_ERROR),
                                           entries=[rpc.SendResultEntry(status=pb.Status(code=pb.INTERNAL_SERVER_ERROR))])
        self.sent.extend(call.request.messages)
        return rpc.SendMessageResponse(status=pb.Status(code=pb.OK), entries=[rpc.SendResultEntry(status=pb.Status(code=pb.OK))])


def _deliver(handler: Callable[[ReceivedMessage], Any], broker: Broker, *, mode: str = "clustering",
             orderly: bool = False, max_attempts: int | None = 3) -> tuple[bool, OwnedQueue, list[int]]:
    """One message through a dispatcher: the verdict of `deliver`, the queue and the attempts seen."""
    attempts: list[int] = []

    def counted(message: ReceivedMessage) -> Any:
        attempts.append(message.delivery_attempt)
        return handler(message)

    async def counted_async(message: ReceivedMessage) -> None:
        await counted(message)

    async def scenario() -> tuple[bool, OwnedQueue]:
        session = Session("127.0.0.1:8081", 1.0, transport=MockTransport(broker))
        runner = HandlerRunner(counted_async if inspect.iscoroutinefunction(handler) else counted, 2)
        runner.start()
        settlement = Settlement(runner, session, group="g", state_group="g", mode=mode, orderly=orderly,
                                retry_backoff_s=(0.01, 0.02), max_attempts=max_attempts)
        dispatcher = Dispatcher(settlement, orderly=orderly, concurrency=2)
        owned = OwnedQueue.at(Q, 0)
        message = _message(0)
        dispatcher.dispatch(owned, message)
        try:
            return await dispatcher.deliver(owned, message), owned
        finally:
            runner.close()
    done, owned = asyncio.run(scenario())
    return done, owned, attempts


def _fail(message: ReceivedMessage) -> None:
    raise ValueError("no")


def test_a_consumed_message_leaves_the_cache_and_the_window():
    done, owned, attempts = _deliver(lambda m: None, Broker())
    assert done and attempts == [1] and (owned.cached, owned.window.in_flight, owned.commit_point()) == (0, 0, 0)


def test_clustering_hands_a_failed_message_to_the_retry_topic_with_its_backoff():
    broker = Broker()
    done, owned, attempts = _deliver(_fail, broker)
    assert done and attempts == [1] and owned.cached == 0
    copy = broker.sent[0]
    assert (copy.topic.name, copy.user_properties[RECONSUME_TIMES], copy.system_properties.message_type) == (
        "%RETRY%g", "1", pb.DELAY)


def test_a_send_back_the_broker_refuses_is_retried_here_first():
    broker = Broker(refuse=1)
    done, _, attempts = _deliver(_fail, broker)
    assert done and attempts == [1, 2] and broker.sent[0].user_properties[RECONSUME_TIMES] == "2"


def test_broadcast_retries_in_place_then_skips():
    broker = Broker()
    done, owned, attempts = _deliver(_fail, broker, mode="broadcast", max_attempts=3)
    assert done and attempts == [1, 2, 3] and broker.sent == [] and owned.cached == 0


def test_orderly_retries_in_place_then_makes_a_dead_letter_without_delay():
    broker = Broker()
    done, _, attempts = _deliver(_fail, broker, orderly=True, max_attempts=2)
    assert done and attempts == [1, 2]
    sent = broker.sent[0].system_properties
    assert sent.delivery_timestamp == sent.born_timestamp  # no delay: the broker decides at once


def test_an_async_handler_runs_on_the_loop():
    async def handler(message: ReceivedMessage) -> None:
        await asyncio.sleep(0)
    done, _, attempts = _deliver(handler, Broker())
    assert done and attempts == [1]


def test_a_queue_let_go_leaves_its_message_uncommitted():
    async def scenario() -> tuple[bool, OwnedQueue]:
        runner = HandlerRunner(_fail, 1)
        settlement = Settlement(runner, Session("127.0.0.1:8081", 1.0, transport=MockTransport(Broker())), group="g",
                                state_group="g", mode="broadcast", orderly=False, retry_backoff_s=(0.01,), max_attempts=5)
        owned = OwnedQueue.at(Q, 0)
        dispatcher = Dispatcher(settlement, orderly=False, concurrency=1)
        dispatcher.dispatch(owned, _message(0))
        delivering = asyncio.create_task(dispatcher.deliver(owned, _message(0)))
        await asyncio.sleep(0.005)
        owned.stopped = True
        return await delivering, owned
    done, owned = asyncio.run(scenario())
    assert not done and (owned.cached, owned.running, owned.commit_point()) == (1, 0, 0)


def test_the_handler_runner_notes_a_held_batchs_starts_and_verdicts():
    held = Held([_message(0), _message(1)])
    runner = HandlerRunner(lambda m: _fail(m) if m.offset else None, 1)
    runner.start()

    async def run_both() -> list[bool]:
        return list(await asyncio.gather(*(runner.run(m, held, i) for i, m in enumerate(held.messages))))
    try:
        assert asyncio.run(run_both()) == [True, False]
    finally:
        runner.close()
    assert held.verdicts == [True, False] and all(held.started)


# -- commits -----------------------------------------------------------------------------------

class CommitPull:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.commits: list[tuple[Queue, int]] = []

    async def commit(self, queue: Queue, offset: int) -> None:
        if self.fail:
            raise RockmqError("broker gone")
        self.commits.append((queue, offset))

    async def committed(self, queue: Queue) -> int | None:
        return 7


def _moved(queue: Queue, start: int, to: int) -> OwnedQueue:
    owned = OwnedQueue.at(queue, start)
    owned.position = to
    return owned


def test_only_moved_commit_points_are_committed_and_a_failed_commit_keeps_the_old_one():
    still, moved = _moved(Q, 3, 3), _moved(Queue("orders", "b0", "127.0.0.1:9000", 1), 3, 9)
    pull = CommitPull()
    asyncio.run(Committer(pull, group="g", offset_file=None, interval_s=5).commit_all([still, moved]))
    assert pull.commits == [(moved.queue, 9)] and moved.committed == 9
    failing = _moved(Q, 3, 5)
    asyncio.run(Committer(CommitPull(fail=True), group="g", offset_file=None, interval_s=5).commit_all([failing]))
    assert failing.committed == 3


def test_broadcast_offsets_go_to_the_local_file_and_come_back_from_it(tmp_path):
    path = str(tmp_path / "offsets.json")

    async def scenario() -> tuple[int | None, int | None]:
        committer = Committer(CommitPull(), group="g", offset_file=path, interval_s=5)
        await committer.commit_all([_moved(Q, 0, 12)])
        reopened = Committer(CommitPull(), group="g", offset_file=path, interval_s=5)
        await reopened.load()
        return await reopened.committed(Q), await reopened.committed(Queue("orders", "b0", "127.0.0.1:9000", 1))
    assert asyncio.run(scenario()) == (12, None)


# -- assignment --------------------------------------------------------------------------------

class Group:
    """Stands in for Membership: fixed members, and the brokers it was told of."""

    def __init__(self, *members: str) -> None:
        self.client_id = "me"
        self.members = tuple(sorted(members))
        self.seen: set[str] = set()

    def saw(self, queues: list[Queue]) -> None:
        self.seen.update(q.endpoint for q in queues)

    async def fetch_members(self) -> None:
        pass


class Routes:
    def __init__(self, queues: dict[str, list[Queue]]) -> None:
        self.routes = queues

    async def queues(self, topic: str) -> list[Queue]:
        if topic not in self.routes:
            raise RockmqError(f"no route for {topic}")
        return self.routes[topic]

    async def offset_at(self, queue: Queue, where: str) -> int:
        return 0


class Attached:
    def __init__(self) -> None:
        self.queues: list[Queue] = []

    def attach(self, owned: OwnedQueue) -> None:
        self.queues.append(owned.queue)


def _queues(n: int, topic: str = "orders") -> list[Queue]:
    return [Queue(topic, "b0", "127.0.0.1:9000", i) for i in range(n)]


def _assignment(routes: Routes, group: Group, **options: Any) -> tuple[Assignment, Attached]:
    pulls = Attached()
    assignment = Assignment(routes, group, Committer(CommitPull(), group="g", offset_file=None, interval_s=5),
                            pulls, Attached(), group="g", mode=options.get("mode", "clustering"),
                            topics=options.get("topics", ["orders"]), strategy=average, start_from="earliest",
                            handover_s=0.01, release_grace_s=0.01)
    return assignment, pulls


def test_a_lone_member_takes_every_queue_at_once_where_the_group_committed():
    assignment, pulls = _assignment(Routes({"orders": _queues(4)}), Group("me"))
    asyncio.run(assignment.rebalance())
    assert sorted(assignment.owned, key=queue_order) == _queues(4) == pulls.queues
    assert {o.position for o in assignment.owned.values()} == {7}  # CommitPull.committed


def test_a_new_share_is_taken_after_the_handover_and_a_lost_queue_is_let_go_at_once():
    queues = _queues(4)

    async def scenario() -> list[list[Queue]]:
        assignment, _ = _assignment(Routes({"orders": queues}), Group("me", "other"))
        seen = []
        for group in (Group("me", "other"), Group("alpha", "me", "other")):  # then alpha joins
            assignment._membership = group
            await assignment.rebalance()
            seen.append(sorted(assignment.owned, key=queue_order))  # right after
            await asyncio.sleep(0.05)
            seen.append(sorted(assignment.owned, key=queue_order))  # after the handover
        return seen
    assert asyncio.run(scenario()) == [[], queues[:2], [], queues[2:3]]


def test_a_topic_without_a_route_keeps_its_queues_and_broadcast_takes_them_all():
    routes = Routes({"orders": _queues(2), "refunds": _queues(2, "refunds")})
    assignment, _ = _assignment(routes, Group("me", "other"), mode="broadcast", topics=["orders", "refunds"])
    asyncio.run(assignment.rebalance())
    assert len(assignment.owned) == 4
    del routes.routes["refunds"]
    asyncio.run(assignment.rebalance())
    assert len(assignment.owned) == 4


# -- membership --------------------------------------------------------------------------------

def _members(answer: Callable[[Call], object], lane: str | None = None) -> Membership:
    session = Session("127.0.0.1:8081", 1.0, client_id="me", transport=MockTransport(answer))

    async def no_routes(topic: str) -> list[Queue]:
        raise RockmqError("no route")
    return Membership(session, no_routes, group="g", lane=lane, heartbeat_s=10, rebalance_s=20)


def test_members_are_this_lanes_and_live_lanes_are_every_lane_with_a_member():
    reply = admin.ListMembersResponse(members=[admin.GroupMember(client_id=c, lane=lane) for c, lane in
                                               [("b", ""), ("a", "dev1"), ("c", "dev1"), ("d", "dev2")]])
    base, dev1 = _members(lambda call: reply), _members(lambda call: reply, lane="dev1")
    asyncio.run(base.fetch_members())
    asyncio.run(dev1.fetch_members())
    assert (base.members, dev1.members, base.live_lanes) == (("b", "me"), ("a", "c", "me"), {"dev1", "dev2"})


def test_a_heartbeat_fails_only_when_every_broker_fails():
    def answer(call: Call) -> object:
        if call.endpoint.endswith(":9001"):
            raise RockmqError("gone")
        return rpc.HeartbeatResponse(status=pb.Status(code=pb.OK))
    membership = _members(answer)
    membership.saw([Queue("orders", "b1", "127.0.0.1:9001", 0)])
    asyncio.run(membership.heartbeat())  # one of two answered
    membership.endpoints = {"127.0.0.1:9001"}
    with pytest.raises(RockmqError):
        asyncio.run(membership.heartbeat())


# -- a held POP batch, and the retry topic's conventions ---------------------------------------

def test_a_held_batch_settles_each_finished_message_once_and_renews_the_rest():
    held = Held([_message(0), _message(1), _message(2)])
    held.started = [10.0, 10.0, 0.0]
    held.verdicts = [True, None, None]
    assert held.to_renew(now=15.0, longest_run_s=30.0) == [1, 2]
    assert held.to_renew(now=45.0, longest_run_s=30.0) == [2]  # stuck in its handler: let go
    assert held.take_finished() == ([held.messages[0]], [])
    held.verdicts[1] = False
    assert held.take_finished() == ([], [held.messages[1]])
    assert held.take_finished() == ([], [])


def test_a_send_back_copy_is_presented_as_the_original_next_attempt():
    original = _message(5, properties={"k": "v"})
    copy = send_back_copy(original, "g", failures=2, delay_ms=1000)
    assert (copy.topic, copy.delay, copy.properties[RECONSUME_TIMES]) == ("%RETRY%g", 1000, "2")
    pulled = _message(0, topic=copy.topic, properties=dict(copy.properties))
    shown = presented(pulled)
    assert (shown.topic, shown.message_id, shown.delivery_attempt, shown.properties) == ("orders", "id5", 3, {"k": "v"})
    assert presented(original) is original


def test_the_backoff_ladder_holds_at_its_last_step():
    assert [backoff_s((1.0, 5.0), n) for n in (1, 2, 3, 9)] == [1.0, 5.0, 5.0, 5.0]


# -- the façade --------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{"mode": "fifo"}, {"mode": "broadcast"}, {"start_from": "middle"},
                                     {"concurrency": 0}, {"retry_backoff_s": ()}])
def test_options_that_cannot_work_are_refused_before_anything_is_made(options):
    with pytest.raises(ValueError):
        AsyncPushConsumer("127.0.0.1:8081", "g", {"orders": "*"}, print, transport=MockTransport(print), **options)
