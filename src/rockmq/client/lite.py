"""A consumer's lite subscriptions (docs/client.md "Lite topics"): which lite topics of its LITE
parent topics this client receives, as the broker keeps them per client id.

`subscribe` sends SyncLiteSubscription PARTIAL_ADD of the one name (the name as one entry, not
its characters) and keeps it once the broker accepted it (a quota refusal, QuotaExceeded, keeps
nothing); `unsubscribe` forgets the name first, then sends PARTIAL_REMOVE. Every `refresh_s`
(30 s, as the official clients) each parent's whole set goes again as COMPLETE_ADD, which
replaces the broker's copy: that is the client's liveness for the broker (which drops the sets
of clients it stops hearing from), and repairs any difference a failed call left. A simple
consumer also heartbeats every `heartbeat_s` (10 s, as the official clients) with the lite client
type LITE_SIMPLE_CONSUMER, so a consumer that does not receive for a while is still heard from;
a push consumer's heartbeats are its membership's, which declare LITE_PUSH_CONSUMER from the
first subscription on. Calls go to the access points, as the official
client sends them; the broker answers for the parent on every broker.

Bounded: the sets hold what the broker accepted, so at most its lite subscription quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection, Iterable

from rockmq.client.errors import RockmqError
from rockmq.client.session import Session
from rockmq.protocol import pb, rpc

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 1.0  # a closing consumer's goodbye waits no longer

# A consumer of each kind becomes this kind once it holds lite subscriptions.
LITE_CLIENT_TYPE = {pb.SIMPLE_CONSUMER: pb.LITE_SIMPLE_CONSUMER, pb.PUSH_CONSUMER: pb.LITE_PUSH_CONSUMER}


def parent_topic(subscribed: Collection[str], topic: str | None) -> str:
    """The LITE topic a consumer's lite subscription is of: `topic`, or its only subscribed topic."""
    if topic is None:
        if len(subscribed) != 1:
            raise ValueError("this consumer subscribes several topics: name the LITE topic (topic=...)")
        return next(iter(subscribed))
    if topic not in subscribed:
        raise ValueError(f"topic {topic!r} is not among this consumer's subscriptions")
    return topic


def sync_request(action: pb.LiteSubscriptionAction, topic: str, group: str,
                 names: Iterable[str]) -> rpc.SyncLiteSubscriptionRequest:
    """The SyncLiteSubscription request: one entry per name (a str is one name, not its characters)."""
    entries = [names] if isinstance(names, str) else list(names)
    return rpc.SyncLiteSubscriptionRequest(action=action, topic=pb.Resource(name=topic), group=pb.Resource(name=group),
                                           lite_topic_set=entries)


class LiteSubscriptions:
    """Per parent topic, the lite topics this client holds; and the task that refreshes them."""

    def __init__(self, session: Session, group: str, client_type: pb.ClientType, refresh_s: float,
                 heartbeat_s: float | None = None) -> None:
        """`heartbeat_s`: heartbeat this often once subscribed (None: the consumer heartbeats itself)."""
        self._session = session
        self._heartbeat_s = heartbeat_s
        self._group = group
        self._lite_type = LITE_CLIENT_TYPE[client_type]
        self._base_type = client_type
        self._refresh_s = refresh_s
        self._sets: dict[str, set[str]] = {}
        self._refresher: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def client_type(self) -> pb.ClientType:
        """What the client declares itself: the lite kind once it subscribed a lite topic."""
        return self._lite_type if self._refresher is not None else self._base_type

    def names(self, topic: str) -> frozenset[str]:
        return frozenset(self._sets.get(topic, ()))

    async def subscribe(self, topic: str, name: str) -> None:
        """Receive lite topic `name` of `topic` from now on; raises what the broker refused with."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a lite topic is a non-empty name, not {name!r}")
        await self._sync(pb.PARTIAL_ADD, topic, [name])
        self._sets.setdefault(topic, set()).add(name)
        if self._refresher is None and not self._closed:
            if self._heartbeat_s is not None:
                await self._heartbeat()
            self._refresher = asyncio.create_task(self._run(), name="rockmq-lite-refresh")

    async def unsubscribe(self, topic: str, name: str) -> None:
        """Stop receiving lite topic `name` of `topic` (nothing to do if it was not subscribed). It is
        forgotten here first: should the call fail, the next refresh drops it on the broker too."""
        names = self._sets.get(topic)
        if names is None or name not in names:
            return
        names.discard(name)
        if not names:
            del self._sets[topic]
        await self._sync(pb.PARTIAL_REMOVE, topic, [name])

    async def refresh(self) -> None:
        """Each parent's whole set as COMPLETE_ADD."""
        for topic, names in list(self._sets.items()):
            await self._sync(pb.COMPLETE_ADD, topic, sorted(names))

    async def _run(self) -> None:
        """Heartbeats (if this consumer sends them here) and, every `refresh_s`, a refresh."""
        loop = asyncio.get_running_loop()
        tick = min(self._refresh_s, self._heartbeat_s or self._refresh_s)
        refreshed = loop.time()
        while True:
            await asyncio.sleep(tick)
            try:
                if self._heartbeat_s is not None:
                    await self._heartbeat()
                if loop.time() - refreshed >= self._refresh_s - tick / 2:
                    refreshed = loop.time()
                    await self.refresh()
            except RockmqError as e:  # the next round tries again
                log.warning("group %s: refreshing lite subscriptions failed: %s", self._group, e)

    async def _sync(self, action: pb.LiteSubscriptionAction, topic: str, names: list[str],
                    timeout: float | None = None) -> None:
        request = sync_request(action, topic, self._group, names)
        await self._session.ask("SyncLiteSubscription", lambda _: request, timeout)

    async def _heartbeat(self) -> None:
        request = rpc.HeartbeatRequest(group=pb.Resource(name=self._group), client_type=self._lite_type)
        await self._session.ask("Heartbeat", lambda _: request)

    async def close(self) -> None:
        """Stop refreshing and drop the sets on the broker (COMPLETE_REMOVE; unanswered, the broker
        drops them once it stops hearing from the client)."""
        self._closed = True
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        for topic in list(self._sets):
            with contextlib.suppress(RockmqError):
                await self._sync(pb.COMPLETE_REMOVE, topic, [], CLOSE_TIMEOUT_S)
        self._sets.clear()
