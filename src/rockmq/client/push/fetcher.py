"""Pulling a push consumer's owned queues, within flow control (clustering, broadcast): at most
`max_cached_messages` and `max_cached_bytes` (of bodies) pulled and unfinished per queue. Each pull
is sized to what is left (flow.py, pure) and past either limit pulling that queue pauses until a
message of it finishes (the cache's accounting is owned.py's).

A PRIORITY topic keeps each priority in queues of its own (docs/priority.md): a queue's level is
learnt from the priority of the first message pulled from it, and a queue pauses while an owned
queue of the same topic with a higher level has messages unfinished or more waiting, so a backlog
is fetched highest level first. To learn the levels before a backlog floods in, a queue's first
pull asks for one message without waiting for it (a probe), and the topic's other queues wait
for the probes of those taken with them. Queues of other topics are all of level 0: past their
probes they never wait for each other."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rockmq.client.consumer import Filter
from rockmq.client.errors import RockmqError
from rockmq.client.flow import fitting, pull_size, typical
from rockmq.client.lanes import lane_filter
from rockmq.client.message import ReceivedMessage
from rockmq.client.pull import AsyncPullConsumer, PullResult
from rockmq.client.push.owned import PAUSE_S, OwnedQueue
from rockmq.client.push.retries import presented
from rockmq.protocol import pb

log = logging.getLogger(__name__)

Dispatch = Callable[[OwnedQueue, ReceivedMessage], None]
OUTRANKED_WAIT_S = 0.02  # how often a queue held back by a higher level looks again


@dataclass(eq=False)
class Ranks:
    """One topic's owned queues as priority sees them: those whose first pull is still to come
    (`probing`), and those of a level above 0 (`ranked`)."""

    probing: set[OwnedQueue] = field(default_factory=set)
    ranked: list[OwnedQueue] = field(default_factory=list)

    def learn(self, owned: OwnedQueue, level: int) -> None:
        owned.level = level
        if level > 0:
            self.ranked.append(owned)

    def outranked(self, owned: OwnedQueue) -> bool:
        """Another queue's probe is due, or a queue of a higher level has messages unfinished or waiting."""
        return bool(self.probing) or any(o.level > owned.level and (o.cached or o.backlog) for o in self.ranked)

    def forget(self, owned: OwnedQueue) -> None:
        self.probing.discard(owned)
        if owned in self.ranked:
            self.ranked.remove(owned)


class Fetcher:
    """One pull loop per owned queue, feeding `dispatch` (the dispatcher's) in offset order."""

    def __init__(self, pull: AsyncPullConsumer, dispatch: Dispatch, *, group: str, subscriptions: Mapping[str, Filter],
                 lane: str | None, lane_fallback: bool, batch_size: int, max_cached_messages: int,
                 max_cached_bytes: int, poll_s: float) -> None:
        self._pull = pull
        self._dispatch = dispatch
        self._group = group
        # what each pull sends, worked out once: the subscription's filter with the lane's condition
        self._filters = {topic: lane_filter(f, lane, lane_fallback) for topic, f in subscriptions.items()}
        self._batch_size = batch_size
        self._max_messages, self._max_bytes = max_cached_messages, max_cached_bytes
        self._poll_s = poll_s
        self._ranks: dict[str, Ranks] = {}  # topic -> what its owned queues' levels are

    def attach(self, owned: OwnedQueue) -> None:
        """A queue just taken: its pull loop."""
        queue = owned.queue
        self._ranks.setdefault(queue.topic, Ranks()).probing.add(owned)
        owned.puller = asyncio.create_task(self.run(owned), name=f"rockmq-pull-{queue.topic}-{queue.queue_id}")

    def _filter_for(self, topic: str) -> Filter:
        if topic not in self._filters:  # the retry topic: filtered at first delivery already
            return Filter.tag()
        return self._filters[topic]

    async def run(self, owned: OwnedQueue) -> None:
        """Pull the queue until it is let go: as much as its cache has room for, or wait for room
        (or for higher levels of its topic to empty)."""
        ranks = self._ranks.setdefault(owned.queue.topic, Ranks())  # `attach` made it (a probe due)
        try:
            while not owned.stopped:
                owned.space.clear()
                room = min(self._batch_size, self._max_messages - owned.cached)
                bytes_left = self._max_bytes - owned.cached_bytes
                if room <= 0 or bytes_left <= 0:
                    await self._wait_for_space(owned)
                    continue
                probe = owned in ranks.probing
                if not probe and ranks.outranked(owned):
                    await asyncio.sleep(OUTRANKED_WAIT_S)
                    continue
                size = 1 if probe else pull_size(room, bytes_left, owned.typical_body)
                result = await self._pull_once(owned, size, bytes_left, 0.0 if probe else self._poll_s)
                ranks.probing.discard(owned)
                if result is None:
                    continue
                if owned.released():
                    return
                owned.backlog = len(result.messages) >= size
                if owned.level < 0 and result.messages:
                    ranks.learn(owned, result.messages[0].priority or 0)
                await self._take(owned, result)
        finally:
            ranks.forget(owned)

    async def _pull_once(self, owned: OwnedQueue, size: int, bytes_left: int, poll_s: float) -> PullResult | None:
        """One pull of `size` messages at most; None after a failure (handled: the loop pulls again)."""
        try:
            return await self._pull.pull(owned.queue, owned.position, max_messages=size,
                                         filter=self._filter_for(owned.queue.topic), poll_s=poll_s,
                                         max_bytes=bytes_left)
        except RockmqError as e:
            if e.code == pb.ILLEGAL_OFFSET:
                await self._reset_position(owned, e)
            else:
                log.warning("pull %s/%s:%d failed: %s", owned.queue.topic, owned.queue.broker, owned.queue.queue_id, e)
                await asyncio.sleep(PAUSE_S)
            return None

    async def _take(self, owned: OwnedQueue, result: PullResult) -> None:
        """Dispatch what of a reply fits in the cache; what does not is pulled again once there is room."""
        sizes = [len(m.body) for m in result.messages]
        owned.typical_body = typical(owned.typical_body, sizes)
        taken = fitting(sizes, self._max_bytes - owned.cached_bytes, owned.cached == 0)
        for message in result.messages[:taken]:
            self._dispatch(owned, presented(message))
        if taken < len(result.messages):
            owned.position = result.messages[taken].offset
            if not taken:
                await self._wait_for_space(owned)
        else:
            owned.position = result.next_offset

    @staticmethod
    async def _wait_for_space(owned: OwnedQueue) -> None:
        """Until a message of the queue finishes (or PAUSE_S)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(owned.space.wait(), PAUSE_S)

    async def _reset_position(self, owned: OwnedQueue, error: RockmqError) -> None:
        """The position left the queue's range (retention removed messages, or the queue was recreated)."""
        lo = await self._pull.offset_at(owned.queue, "earliest")
        target = lo if owned.position < lo else await self._pull.offset_at(owned.queue, "latest")
        log.error("group %s: offset %d of %s/%s:%d is gone (%s); continuing at %d", self._group, owned.position,
                  owned.queue.topic, owned.queue.broker, owned.queue.queue_id, error, target)
        owned.position = target
        owned.window.start(target)
