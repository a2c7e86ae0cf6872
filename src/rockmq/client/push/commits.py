"""How far a push consumer got in each queue it reads by offset, and where it starts: the broker's
offsets (UpdateOffset, GetOffset) in clustering mode, a local file in broadcast mode. A queue's
commit point is the oldest offset still in process (owned.py), so a commit never passes a message
that has not finished."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from rockmq.client.errors import RockmqError
from rockmq.client.offsets import LocalOffsetStore, offset_key
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.push.owned import OwnedQueue
from rockmq.client.queues import Queue

log = logging.getLogger(__name__)


class Committer:
    """Commits every `interval_s`, and when asked (a queue handed over, the consumer closing)."""

    def __init__(self, pull: AsyncPullConsumer, *, group: str, offset_file: str | None, interval_s: float) -> None:
        self._pull = pull
        self._group = group
        self._file = LocalOffsetStore(offset_file) if offset_file else None
        self._local: dict[str, int] = {}  # the file's offsets (broadcast)
        self._interval_s = interval_s

    async def load(self) -> None:
        """Read the local offsets once, on start (broadcast)."""
        if self._file is not None:
            self._local = await asyncio.to_thread(self._file.load)

    async def committed(self, queue: Queue) -> int | None:
        """Where the group left `queue`; None if it never committed there."""
        if self._file is not None:
            return self._local.get(offset_key(queue))
        return await self._pull.committed(queue)

    async def run(self, owned: Mapping[Queue, OwnedQueue]) -> None:
        """Commit the queues in `owned` (read anew each round) every `interval_s`, until cancelled."""
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.commit_all(list(owned.values()))
            except Exception:
                log.exception("group %s: commit round failed", self._group)

    async def commit_all(self, owned: Sequence[OwnedQueue]) -> None:
        """Commit each queue whose commit point moved; a queue whose commit fails keeps its old one."""
        changed = [(o, o.commit_point()) for o in owned if o.commit_point() != o.committed]
        if not changed:
            return
        if self._file is not None:
            await self._save(self._file, changed)
            return
        for o, offset in changed:
            try:
                await self._pull.commit(o.queue, offset)
                o.committed = offset
            except RockmqError as e:
                log.warning("group %s: commit of %s:%d failed: %s", self._group, o.queue.topic, o.queue.queue_id, e)

    async def _save(self, file: LocalOffsetStore, changed: list[tuple[OwnedQueue, int]]) -> None:
        """Write the file anew with the changed offsets (atomically: the store replaces it whole)."""
        for o, offset in changed:
            self._local[offset_key(o.queue)] = o.committed = offset
        await asyncio.to_thread(file.save, dict(self._local))
