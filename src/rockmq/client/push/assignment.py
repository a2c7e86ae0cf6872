"""Which queues a push consumer reads by offset, and taking and handing them over as the group
changes (clustering: the strategy's share of the members, allocation.py; broadcast: every queue).
A queue taken starts where the group committed (commits.py) and gets its pull loop (fetcher.py) and,
orderly, its worker (dispatch.py); a queue handed over stops at once, its running handlers get a
moment, and where it got is committed for its next owner."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from rockmq.client.allocation import Strategy
from rockmq.client.errors import RockmqError
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.push.commits import Committer
from rockmq.client.push.dispatch import Dispatcher
from rockmq.client.push.fetcher import Fetcher
from rockmq.client.push.membership import Membership
from rockmq.client.push.owned import OwnedQueue
from rockmq.client.queues import Queue, queue_order

log = logging.getLogger(__name__)


class Assignment:
    """The owned queues (`owned`), kept to what the last rebalance gave this member."""

    def __init__(self, pull: AsyncPullConsumer, membership: Membership, committer: Committer, fetcher: Fetcher,
                 dispatcher: Dispatcher, *, group: str, mode: str, topics: Iterable[str], strategy: Strategy,
                 start_from: str, handover_s: float, release_grace_s: float) -> None:
        self._pull = pull
        self._membership = membership
        self._committer = committer
        self._fetcher, self._dispatcher = fetcher, dispatcher
        self._group, self._mode = group, mode
        self._topics = list(topics)  # every topic read, the retry topic among them (clustering)
        self._strategy, self._start_from = strategy, start_from
        self._handover_s = handover_s  # how long a newly assigned queue is left to its previous owner
        self._release_grace_s = release_grace_s  # how long a handed-over queue's handlers get to finish
        self.owned: dict[Queue, OwnedQueue] = {}
        self._wanted: set[Queue] = set()  # what the last rebalance gave this member
        self._lock = asyncio.Lock()  # one rebalance (or delayed taking) at a time
        self._later: set[asyncio.Task[None]] = set()  # delayed takings not yet done
        self._shut = False

    def shut(self) -> list[asyncio.Task[None]]:
        """No more rebalances or takings (the consumer closes); the delayed takings, for the caller
        to cancel with its own loops."""
        self._shut = True
        return list(self._later)

    async def rebalance(self) -> None:
        """Take this member's share now: let go of what it lost, take what it gained."""
        async with self._lock:
            if self._shut:
                return
            if self._mode == "clustering" and not self._membership.members:
                await self._membership.fetch_members()
            self._wanted = wanted = await self._share()
            for queue in [q for q in self.owned if q not in wanted]:
                await self._release(queue)
            new = sorted(wanted - self.owned.keys(), key=queue_order)
            if new and len(self._membership.members) > 1 and self._mode == "clustering":
                # Another member may still hold these: it lets go (and commits) when it sees the same
                # change, within a heartbeat. Taking them after that re-reads far fewer messages.
                task = asyncio.create_task(self._acquire_later(new))
                self._later.add(task)
                task.add_done_callback(self._later.discard)
            else:
                await self._acquire_all(new)

    async def _share(self) -> set[Queue]:
        """This member's queues of every topic it reads."""
        wanted: set[Queue] = set()
        for topic in self._topics:
            wanted.update(await self._share_of(topic))
        return wanted

    async def _share_of(self, topic: str) -> Iterable[Queue]:
        """This member's queues of `topic`; those it has while the topic's route cannot be read."""
        try:
            queues = await self._pull.queues(topic)
        except RockmqError as e:
            log.warning("group %s: no route for %s: %s", self._group, topic, e)
            return [q for q in self.owned if q.topic == topic]
        self._membership.saw(queues)
        if self._mode == "broadcast":
            return queues
        try:
            return self._strategy(self._membership.client_id, self._membership.members, queues)
        except ValueError as e:
            log.error("group %s: allocation strategy refused topic %s: %s", self._group, topic, e)
            return []

    async def _acquire_later(self, queues: list[Queue]) -> None:
        """Take `queues` after the handover time, those of them still this member's then."""
        await asyncio.sleep(self._handover_s)
        async with self._lock:
            if not self._shut:
                await self._acquire_all([q for q in queues if q in self._wanted and q not in self.owned])

    async def _acquire_all(self, queues: list[Queue]) -> None:
        """Take each queue; one that cannot be read yet is tried again at the next rebalance. Where
        each starts is read first and then all start at once: a PRIORITY topic's queues learn
        their levels together (fetcher.py)."""
        starts: list[tuple[Queue, int]] = []
        for queue in queues:
            try:
                starts.append((queue, await self._start_of(queue)))
            except RockmqError as e:
                log.warning("group %s: cannot take %s/%s:%d yet: %s", self._group, queue.topic, queue.broker,
                            queue.queue_id, e)
        for queue, start in starts:
            owned = self.owned[queue] = OwnedQueue.at(queue, start)
            self._fetcher.attach(owned)
            self._dispatcher.attach(owned)

    async def _start_of(self, queue: Queue) -> int:
        """Where reading `queue` starts: where the group left it (new to the group: at `start_from`)."""
        start = await self._committer.committed(queue)
        return start if start is not None else await self._pull.offset_at(queue, self._start_from)

    async def _release(self, queue: Queue) -> None:
        """Hand a queue over: stop pulling, give running handlers a moment, commit where we are."""
        owned = self.owned.pop(queue)
        await self.stop([owned], self._release_grace_s)
        await self._committer.commit_all([owned])

    @staticmethod
    async def stop(owned: list[OwnedQueue], grace_s: float) -> None:
        """Stop pulling at once; running handlers get `grace_s` to finish. Whatever is unfinished
        then stays uncommitted, so it is delivered again (to this queue's next owner)."""
        for o in owned:
            o.stopped = True
            if o.puller is not None:
                o.puller.cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while any(o.running for o in owned) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        tasks = [t for o in owned for t in (o.puller, o.worker) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
