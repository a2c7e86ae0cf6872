"""The receive relay: a LiteSimpleConsumer gets its lite topics from every broker of the parent
(docs/lite-topics.md "Several brokers").

The official Python LiteSimpleConsumer (5.1.2) receives on its route's first readable queue only,
and never asks for an assignment, so it reaches one broker (X) while its lite topics live on all
of them (`conventions.lite_owner`). X serves its own as always and passes a ReceiveMessage to each
other broker owning one the client holds (`FORWARDED_HEADER` plus the client's id, language and
version headers, so the owner serves that client's subscription, which SyncLiteSubscription made
known to every holder). A receive looks at X and at the owners without waiting; finding nothing,
X long-polls its own while each owner *watches* for the client (`LITE_WATCH_HEADER`: a forwarded
receive that waits for what would wake the client's receives there, and hands nothing out); the
first to end decides: X's poll brings its messages, a watch ending sends X to look again. So a
remote lite topic's message reaches the client one look later than a local one (9-17 ms from its
send on loopback, against 5-9 ms), and an idle consumer costs each owner one waiting call per receive. Which source is
looked at first rotates, so a busy one does not starve the others of a small batch.

The owner's messages go out with their receipt handles wrapped (`wrap`: `~owner~handle`, never a
local handle, which is base64), so X passes their AckMessage, ChangeInvisibleDuration (its new
handle wrapped again) and ForwardMessageToDeadLetterQueue to the owner and answers with its
result. A wrapping naming no broker of the topic is INVALID_RECEIPT_HANDLE like any bad handle; an
owner out of reach answers PROXY_TIMEOUT, which clients retry. Only the Messaging service's calls
of a client whose settings said LITE_SIMPLE_CONSUMER are relayed (push consumers long-poll every
broker through their assignment; rockmq's client receives on every queue); a forwarded call is
never passed on.

Bounded: at most `MAX_RELAYED_PER_CLIENT` relayed receives of one client at a time, and as many in
all as `max_waiting_receives` (beyond either, a receive is served locally only); every remote
call has a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

import grpc

from rockmq.broker.cluster.lite_routing import FORWARDED
from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster
from rockmq.broker.pop.take import Deferred
from rockmq.protocol import pb, rpc, svc
from rockmq.protocol.conventions import LITE_WATCH_HEADER, lite_owner
from rockmq.protocol.errors import BrokerError

log = logging.getLogger(__name__)

MARK = "~"  # begins a wrapped handle; never a local one's first character (urlsafe base64)
LOOK_TIMEOUT_S = 1.0  # one look at an owner (a receive that does not wait), and a watch's margin
MAX_RELAYED_PER_CLIENT = 2
WARN_EVERY_S = 30.0  # an owner out of reach is logged once in this long

WATCH = ((LITE_WATCH_HEADER, "1"),)
Headers = tuple[tuple[str, str], ...]
Received = list[bytes | Deferred]
OwnerRequest = TypeVar("OwnerRequest", rpc.ChangeInvisibleDurationRequest, rpc.ForwardMessageToDeadLetterQueueRequest)
Local = Callable[[float, int], Coroutine[Any, Any, Received]]  # (poll seconds, batch) -> this broker's messages


def wrap(broker: str, handle: str) -> str:
    return f"{MARK}{broker}{MARK}{handle}"


def unwrap(handle: str) -> tuple[str, str] | None:
    """A wrapped handle -> (owner broker, its handle); None if it is not one."""
    if handle[:1] != MARK:
        return None
    broker, sep, inner = handle[1:].partition(MARK)
    return (broker, inner) if sep and broker and inner else None


def invalid_handle() -> BrokerError:
    """What a wrapping that names no owner is answered with: what any malformed handle gets."""
    return BrokerError(pb.INVALID_RECEIPT_HANDLE, "malformed receipt handle: not a receipt handle")


def unreachable(broker: str) -> pb.Status:
    return pb.Status(code=pb.PROXY_TIMEOUT, message=f"broker {broker!r} holding this message did not answer (retry)")


class LiteRelay:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._relaying: dict[str, int] = {}  # client id -> its relayed receives now
        self._turn = itertools.count()
        self._warned: dict[str, float] = {}  # owner endpoint -> when last logged (one per broker)

    # --- receive ------------------------------------------------------------------------------

    async def owners(self, topic: str, names: set[str] | None) -> dict[str, str]:
        """The other brokers (name -> endpoint) owning a lite topic of `names` (None: all of the parent)."""
        holders = await self.cluster.holders(topic)
        if len(holders) < 2:
            return {}
        me = self.cluster.name
        if names is None:
            return {h.broker: h.endpoint for h in holders if h.broker != me}
        brokers = [h.broker for h in holders]
        wanted: set[str] = set()
        for name in names:  # at most the client's quota of them; most often every broker is found at once
            wanted.add(lite_owner(name, brokers))
            if len(wanted) == len(brokers):
                break
        return {h.broker: h.endpoint for h in holders if h.broker in wanted and h.broker != me}

    def admit(self, client_id: str) -> bool:
        """Whether another relayed receive of this client fits (then `done` must follow)."""
        count = self._relaying.get(client_id, 0)
        if count >= MAX_RELAYED_PER_CLIENT or len(self._relaying) >= self.cluster.ctx.settings.max_waiting_receives:
            return False
        self._relaying[client_id] = count + 1
        return True

    def done(self, client_id: str) -> None:
        left = self._relaying.pop(client_id) - 1
        if left:
            self._relaying[client_id] = left

    async def receive(self, local: Local, owners: dict[str, str], request: rpc.ReceiveMessageRequest,
                      client: Headers, batch: int, poll_s: float) -> Received:
        """Up to `batch` messages from this broker (`local`) and the `owners`, waiting up to `poll_s`
        for the first: this broker's first, then the owners'."""
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        sources: list[tuple[str, str] | None] = [None, *owners.items()]  # None: this broker
        start = next(self._turn) % len(sources)
        order = sources[start:] + sources[:start]
        while True:
            found = await self._look(local, order, request, client, batch)
            left = until - loop.time()
            if found or left <= 0:
                return found
            found = await self._wait(local, owners, request, client, batch, left)
            if found:
                return found

    async def _look(self, local: Local, order: list[tuple[str, str] | None], request: rpc.ReceiveMessageRequest,
                    client: Headers, batch: int) -> Received:
        """Each source once, without waiting, until `batch` are found: this broker's first."""
        mine: Received = []
        theirs: Received = []
        for source in order:
            want = batch - len(mine) - len(theirs)
            if want <= 0:
                break
            if source is None:
                mine = await local(0.0, want)
            else:
                theirs += await self._take(*source, request, client, want)
        return mine + theirs

    async def _wait(self, local: Local, owners: dict[str, str], request: rpc.ReceiveMessageRequest, client: Headers,
                    batch: int, left: float) -> Received:
        """A long poll here (which takes what arrives) and a watch at each owner (which takes nothing),
        until the first ends -> what this broker's took. Ending the others loses nothing: the poll
        here is cancelled only while it waits, and a watch hands nothing out."""
        here = asyncio.create_task(local(left, batch))
        watches = [asyncio.create_task(self._watch(*owner, request, client, left))
                   for owner in owners.items()]
        try:
            await asyncio.wait([here, *watches], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (here, *watches):
                task.cancel()  # nothing to a task that ended
            await asyncio.gather(here, *watches, return_exceptions=True)
        return [] if here.cancelled() else here.result()

    def _ask(self, broker: str, request: rpc.ReceiveMessageRequest, batch: int, poll_s: float) -> rpc.ReceiveMessageRequest:
        """The client's receive, for the owner `broker`."""
        ask = rpc.ReceiveMessageRequest()
        ask.CopyFrom(request)
        ask.message_queue.broker.name = broker
        ask.batch_size = batch
        ask.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        return ask

    async def _take(self, broker: str, endpoint: str, request: rpc.ReceiveMessageRequest, client: Headers,
                    batch: int) -> list[bytes]:
        """The owner's messages for this client, without waiting, framed with their handles wrapped;
        none from an owner out of reach (logged)."""
        out: list[bytes] = []
        try:
            call = self.cluster.service(endpoint, svc.MessagingServiceStub).ReceiveMessage(
                self._ask(broker, request, batch, 0.0), metadata=(*FORWARDED, *client), timeout=LOOK_TIMEOUT_S)
            async for frame in call:
                if frame.WhichOneof("content") == "message":
                    props = frame.message.system_properties
                    props.receipt_handle = wrap(broker, props.receipt_handle)
                    out.append(frame.SerializeToString())
                else:
                    self._refused(endpoint, frame)
        except grpc.aio.AioRpcError as e:
            self._warn(endpoint, str(e.details()))
        return out

    async def _watch(self, broker: str, endpoint: str, request: rpc.ReceiveMessageRequest, client: Headers,
                     wait_s: float) -> None:
        """Until the owner may have a message for this client, at most `wait_s`. An owner out of reach
        (or refusing) wakes nobody: it is waited out, not asked again at once."""
        started = time.monotonic()
        try:
            call = self.cluster.service(endpoint, svc.MessagingServiceStub).ReceiveMessage(
                self._ask(broker, request, 1, wait_s), metadata=(*FORWARDED, *WATCH, *client),
                timeout=wait_s + LOOK_TIMEOUT_S)
            async for frame in call:
                if self._refused(endpoint, frame):
                    break
            else:
                return
        except grpc.aio.AioRpcError as e:
            self._warn(endpoint, str(e.details()))
        await asyncio.sleep(started + wait_s - time.monotonic())

    def _refused(self, endpoint: str, frame: rpc.ReceiveMessageResponse) -> bool:
        """Whether a reply frame is a refusal (logged)."""
        if frame.WhichOneof("content") != "status" or frame.status.code in (pb.OK, pb.MESSAGE_NOT_FOUND):
            return False
        self._warn(endpoint, f"{pb.Code.Name(frame.status.code)}: {frame.status.message}")
        return True

    def _warn(self, endpoint: str, why: str) -> None:
        now = time.monotonic()
        if now - self._warned.get(endpoint, -WARN_EVERY_S) >= WARN_EVERY_S:
            self._warned[endpoint] = now
            log.warning("cannot receive a lite consumer's messages from their broker at %s: %s", endpoint, why)

    # --- ack, change invisible time, dead letter ----------------------------------------------

    async def _endpoint(self, topic: str, broker: str) -> str | None:
        """Where another broker holding the topic is (None: no such broker, or this one)."""
        if broker == self.cluster.name:
            return None
        return next((h.endpoint for h in await self.cluster.holders(topic) if h.broker == broker), None)

    async def ack(self, group: str, topic: str, handles: Sequence[str], entries: Sequence[bytes],
                  statuses: list[pb.Status | None]) -> bool:
        """Ack at their owners the entries refused here whose handles are wrapped, their statuses
        replaced by the owners' (in place) -> whether any was."""
        owned: dict[str, list[tuple[int, str]]] = {}
        for i, st in enumerate(statuses):
            found = unwrap(handles[i]) if st is not None else None
            if found is not None:
                owned.setdefault(found[0], []).append((i, found[1]))
        for broker, part in owned.items():
            endpoint = await self._endpoint(topic, broker)
            if endpoint is None:
                continue  # refused here already: INVALID_RECEIPT_HANDLE
            request = rpc.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic), entries=[
                rpc.AckMessageEntry(message_id=rpc.AckMessageEntry.FromString(entries[i]).message_id, receipt_handle=h)
                for i, h in part])
            try:
                reply = await self.cluster.service(endpoint, svc.MessagingServiceStub).AckMessage(
                    request, metadata=FORWARDED, timeout=RPC_TIMEOUT_S)
                results = [e.status for e in reply.entries] if len(reply.entries) == len(part) else [reply.status] * len(part)
            except grpc.aio.AioRpcError as e:
                self._warn(endpoint, str(e.details()))
                results = [unreachable(broker)] * len(part)
            for (i, _), st in zip(part, results, strict=True):
                statuses[i] = None if st.code == pb.OK else st
        return bool(owned)

    async def change_invisible(self, request: rpc.ChangeInvisibleDurationRequest, broker: str,
                               handle: str) -> rpc.ChangeInvisibleDurationResponse:
        """At the owner, with its handle; the new one comes back wrapped (the old one on failure)."""
        reply = await self._at_owner("ChangeInvisibleDuration", request, broker, handle)
        if reply is None:
            return rpc.ChangeInvisibleDurationResponse(status=unreachable(broker), receipt_handle=request.receipt_handle)
        return rpc.ChangeInvisibleDurationResponse(status=reply.status,
                                                   receipt_handle=wrap(broker, reply.receipt_handle or handle))

    async def dead_letter(self, request: rpc.ForwardMessageToDeadLetterQueueRequest, broker: str,
                          handle: str) -> rpc.ForwardMessageToDeadLetterQueueResponse:
        reply = await self._at_owner("ForwardMessageToDeadLetterQueue", request, broker, handle)
        return rpc.ForwardMessageToDeadLetterQueueResponse(status=unreachable(broker) if reply is None else reply.status)

    async def _at_owner(self, method: str, request: OwnerRequest, broker: str, handle: str) -> Any:
        """A call about one delivery made at its owner `broker`, with the owner's `handle` -> its reply;
        None if it did not answer (logged). A broker not holding the topic: INVALID_RECEIPT_HANDLE."""
        endpoint = await self._endpoint(request.topic.name, broker)
        if endpoint is None:
            raise invalid_handle()
        ask = type(request)()
        ask.CopyFrom(request)
        ask.receipt_handle = handle
        try:
            return await getattr(self.cluster.service(endpoint, svc.MessagingServiceStub), method)(
                ask, metadata=FORWARDED, timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            self._warn(endpoint, str(e.details()))
            return None
