"""A push consumer's standing in its group: heartbeats to every broker of its topics (so members
that joined through another broker see it too), the group's members in its lane and the lanes with
live members (the admin call ListMembers), and its goodbye on close. Every `heartbeat_s` a round
does all of that, and asks for a rebalance when the members changed or every `rebalance_s`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from rockmq.client.errors import RockmqError
from rockmq.client.queues import Queue
from rockmq.client.session import Session
from rockmq.protocol import admin, pb, rpc

log = logging.getLogger(__name__)

Routes = Callable[[str], Awaitable[list[Queue]]]


class Membership:
    """Who is in the group (`members`, `live_lanes`) and which brokers hear from this member (`endpoints`)."""

    def __init__(self, session: Session, routes: Routes, *, group: str, lane: str | None, heartbeat_s: float,
                 rebalance_s: float, client_type: Callable[[], pb.ClientType] = lambda: pb.PUSH_CONSUMER) -> None:
        """`client_type()`: what heartbeats declare (a lite consumer's changes once it subscribes)."""
        self._session = session
        self._client_type = client_type
        self._routes = routes
        self._group, self._lane = group, lane
        self.client_id = session.client_id
        self._heartbeat_s, self._rebalance_s = heartbeat_s, rebalance_s
        self.members: tuple[str, ...] = ()  # this lane's members' ids, sorted, this one among them
        self.live_lanes: frozenset[str] = frozenset()
        self.endpoints: set[str] = set(session.access_points)

    def saw(self, queues: Iterable[Queue]) -> None:
        """Brokers of a route just read: heartbeats go to them too."""
        self.endpoints.update(q.endpoint for q in queues)

    async def join(self, topics: Iterable[str]) -> None:
        """Heartbeat to every broker of the topics from the start, so members that joined through
        others see this one (a topic without a route yet is left to the rebalances)."""
        for topic in topics:
            with contextlib.suppress(RockmqError):
                self.saw(await self._routes(topic))
        await self.heartbeat()

    async def run(self, rebalance: Callable[[], Awaitable[None]] | None) -> None:
        """Every `heartbeat_s` until cancelled: heartbeat, read the members and (offset modes: given
        `rebalance`) rebalance when they changed or `rebalance_s` after the last time."""
        last = time.monotonic()
        while True:
            await asyncio.sleep(self._heartbeat_s)
            try:
                await self.heartbeat()
                before = (self.members, self.live_lanes)
                await self.fetch_members()
                if rebalance is None:
                    continue
                if (self.members, self.live_lanes) != before or time.monotonic() - last >= self._rebalance_s:
                    await rebalance()
                    last = time.monotonic()
            except RockmqError as e:
                log.warning("group %s: membership round failed: %s", self._group, e)
            except Exception:
                log.exception("group %s: membership round failed", self._group)

    async def heartbeat(self) -> None:
        """To every known broker at once; fails only if every one of them failed."""
        request = rpc.HeartbeatRequest(group=pb.Resource(name=self._group), client_type=self._client_type())
        replies = await asyncio.gather(*(self._session.unary(e, "Heartbeat", request) for e in sorted(self.endpoints)),
                                       return_exceptions=True)
        errors = [r for r in replies if isinstance(r, BaseException)]
        if len(errors) == len(replies):
            raise errors[0]

    async def fetch_members(self) -> None:
        """The group's members in this lane (sorted ids) and the lanes that have live members: from the
        first broker that answers, the access points first."""
        last: RockmqError | None = None
        access_points = self._session.access_points
        for endpoint in [*access_points, *sorted(self.endpoints - set(access_points))]:
            try:
                reply = await self._session.admin(endpoint, "ListMembers", admin.GroupRequest(name=self._group, local=True))
            except RockmqError as e:
                last = e
                continue
            mine = {m.client_id for m in reply.members if (m.lane or None) == self._lane}
            self.members = tuple(sorted(mine | {self.client_id}))
            self.live_lanes = frozenset(m.lane for m in reply.members if m.lane)
            return
        assert last is not None
        raise last

    async def leave(self) -> None:
        """Tell every known broker this member is gone (at once, so the others rebalance now, not
        after the broker's silence timeout); unanswered goodbyes are let be."""
        request = rpc.NotifyClientTerminationRequest(group=pb.Resource(name=self._group))
        await asyncio.gather(*(self._session.unary(e, "NotifyClientTermination", request, timeout=1.0)
                               for e in self.endpoints), return_exceptions=True)
