"""Long-poll wake-ups: an arrival wakes only the polls it can serve.

A pull waits on one queue, so an append wakes the pulls of the queues it appended to and no other.
A POP receive reads every queue of its topic, but only what its group's filter accepts: a receive
under a tag filter waits for its tags, any other (`*`, no filter, SQL92: not cheap to decide) for
anything on the topic. An append wakes the receives whose tags it carries; one whose tags are not
known (a retry become visible, a FIFO group released) wakes every receive of its topic.

No lost wake-up: a poll takes its event *before* it looks, and an arrival pops and sets the events
it wakes, so an arrival between a poll's empty look and its wait still finds the poll's event.
A lite consumer's receive waits on its reader's event (broker/lite/subscriptions.py): a message
stored in a lite topic wakes only the readers holding it, so a consumer of 10 of a million lite
topics is woken as a consumer of 10 queues is; what wakes every receive of the topic (a retry made
visible, a deleted topic, the drain) wakes the readers too.
Events are shared by the polls waiting for the same thing; the next arrival replaces them. The
tag sets are the clients' to choose, and an event whose tags never arrive was kept for good: past
MAX_IDLE_TAG_SETS on a topic, those no poll waits on are dropped (a poll takes its event and waits
on it with no await between, so one it still needs is always waited on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Set

Tags = frozenset[str] | None  # what a POP receive waits for; None: anything
MAX_IDLE_TAG_SETS = 64  # a topic's tag sets kept with no poll waiting on them (each new one beyond drops them)


class Arrivals:
    def __init__(self) -> None:
        self._pulls: dict[int, dict[int, asyncio.Event]] = {}  # topic -> queue -> event
        self._receives: dict[int, dict[Tags, asyncio.Event]] = {}  # topic -> tags -> event
        self._readers: dict[int, dict[object, asyncio.Event]] = {}  # LITE topic -> reader key -> event
        self.tag_watched: set[int] = set()  # topics with a receive waiting for some tags: appends note their tags
        self._waited: dict[asyncio.Event, int] = {}  # event -> the polls waiting on it now
        self.woken = 0  # polls that ended their wait on an arrival (not on their timeout): tests read it
        self.ended = False  # the broker drains: every poll answers with what it has, at once (`end`)

    def queue(self, topic_id: int, queue_id: int) -> asyncio.Event:
        """The event a pull of this queue waits on."""
        queues = self._pulls.setdefault(topic_id, {})
        ev = queues.get(queue_id)
        if ev is None:
            ev = queues[queue_id] = asyncio.Event()
        return ev

    def tags(self, topic_id: int, tags: Tags) -> asyncio.Event:
        """The event a POP receive of the topic waits on: for `tags` (None: anything)."""
        waits = self._receives.setdefault(topic_id, {})
        ev = waits.get(tags)
        if ev is None:
            if tags is not None and len(waits) >= MAX_IDLE_TAG_SETS:
                for idle in [t for t, e in waits.items() if t is not None and e not in self._waited]:
                    del waits[idle]
            ev = waits[tags] = asyncio.Event()
            if tags is not None:
                self.tag_watched.add(topic_id)
        return ev

    def reader(self, topic_id: int, key: object) -> asyncio.Event:
        """The event a lite reader's receive of the topic waits on (`key`: the reader's)."""
        readers = self._readers.setdefault(topic_id, {})
        ev = readers.get(key)
        if ev is None:
            ev = readers[key] = asyncio.Event()
        return ev

    def lite(self, topic_id: int, keys: Iterable[object]) -> None:
        """Something changed for these readers of the topic (a lite topic they hold got a message or was released)."""
        readers = self._readers.get(topic_id)
        if readers:
            for key in keys:
                ev = readers.pop(key, None)
                if ev is not None:
                    ev.set()

    async def wait(self, ev: asyncio.Event, timeout: float) -> None:
        """Wait for `ev`, at most `timeout` seconds."""
        self._waited[ev] = self._waited.get(ev, 0) + 1
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except TimeoutError:
            return
        finally:
            left = self._waited.pop(ev) - 1
            if left:
                self._waited[ev] = left
        self.woken += 1

    def end(self) -> None:
        """The broker drains: wake every poll, and from now on none waits (each answers what it found,
        empty or not, so that the server's shutdown is not held by long polls)."""
        self.ended = True
        for topic_id in list(self._pulls.keys() | self._receives.keys() | self._readers.keys()):
            self.topic(topic_id)

    def appended(self, topic_id: int, queues: Iterable[int], tags: Set[str | None] | None) -> None:
        """Messages entered `queues` of the topic, carrying `tags` (None: not known)."""
        pulls = self._pulls.get(topic_id)
        if pulls:
            for queue_id in queues:
                ev = pulls.pop(queue_id, None)
                if ev is not None:
                    ev.set()
        receives = self._receives.get(topic_id)
        if not receives:
            return
        if tags is None or len(receives) == 1 and None in receives:
            self.receives(topic_id)
            return
        for waited in [w for w in receives if w is None or not tags.isdisjoint(w)]:
            receives.pop(waited).set()
        if not any(w is not None for w in receives):
            self.tag_watched.discard(topic_id)

    def topic(self, topic_id: int) -> None:
        """Wake every poll of the topic (what changed is not known queue by queue)."""
        for ev in self._pulls.pop(topic_id, {}).values():
            ev.set()
        self.receives(topic_id)

    def receives(self, topic_id: int) -> None:
        """Wake every POP receive of the topic (a retry became visible, a FIFO group was released)."""
        for ev in self._receives.pop(topic_id, {}).values():
            ev.set()
        for ev in self._readers.pop(topic_id, {}).values():
            ev.set()
        self.tag_watched.discard(topic_id)
