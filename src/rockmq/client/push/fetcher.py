"""Pulling a push consumer's owned queues, within flow control (clustering, broadcast): at most
`max_cached_messages` and `max_cached_bytes` (of bodies) pulled and unfinished per queue. Each pull
is sized to what is left (flow.py, pure) and past either limit pulling that queue pauses until a
message of it finishes (the cache's accounting is owned.py's)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

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

    def attach(self, owned: OwnedQueue) -> None:
        """A queue just taken: its pull loop."""
        queue = owned.queue
        owned.puller = asyncio.create_task(self.run(owned), name=f"rockmq-pull-{queue.topic}-{queue.queue_id}")

    def _filter_for(self, topic: str) -> Filter:
        if topic not in self._filters:  # the retry topic: filtered at first delivery already
            return Filter.tag()
        return self._filters[topic]

    async def run(self, owned: OwnedQueue) -> None:
        """Pull the queue until it is let go: as much as its cache has room for, or wait for room."""
        while not owned.stopped:
            owned.space.clear()
            room = min(self._batch_size, self._max_messages - owned.cached)
            bytes_left = self._max_bytes - owned.cached_bytes
            if room <= 0 or bytes_left <= 0:
                await self._wait_for_space(owned)
                continue
            result = await self._pull_once(owned, room, bytes_left)
            if result is None:
                continue
            if owned.released():
                return
            await self._take(owned, result)

    async def _pull_once(self, owned: OwnedQueue, room: int, bytes_left: int) -> PullResult | None:
        """One pull sized to the room left; None after a failure (handled: the loop pulls again)."""
        try:
            return await self._pull.pull(owned.queue, owned.position,
                                         max_messages=pull_size(room, bytes_left, owned.typical_body),
                                         filter=self._filter_for(owned.queue.topic), poll_s=self._poll_s,
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
