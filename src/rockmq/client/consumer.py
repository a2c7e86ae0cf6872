"""AsyncSimpleConsumer: POP consumption — receive, ack, change the invisible time.

Subscriptions are tag expressions (`"a||b"`, `"*"`) or SQL92 (`Filter.sql("region = 'eu'")`),
filtered on the broker. A receive asks the brokers holding each subscribed topic in turn (one
assignment per broker) and returns as soon as one has messages or the long poll ends; a broker
that cannot be reached is passed over while another answers (assignments come from any access
point: session.py).

Lite topics (docs/client.md "Lite topics"): `subscribe_lite(name)` / `unsubscribe_lite(name)`
choose which lite topics of a subscribed LITE topic this client receives (lite.py keeps the set
and refreshes it); a received lite message carries `lite_topic`, which its ack and
change_invisible_duration send along.

With `lane="dev1"` the consumer is a member of its group's lane `dev1` (docs/client.md
"Environment lanes"): it says so on every request, and the broker hands it that lane's messages
only. A base consumer (no lane) gets the rest, and the messages of lanes with no live member.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rockmq.client.errors import BrokerRefused, RockmqError, Unimplemented, from_status
from rockmq.client.limits import (
    ASSIGNMENT_TTL_S,
    BATCH_SIZE,
    HEARTBEAT_S,
    INVISIBLE_S,
    LITE_REFRESH_S,
    LONG_POLL_S,
    REQUEST_TIMEOUT_S,
)
from rockmq.client.lite import LiteSubscriptions, parent_topic
from rockmq.client.message import ReceivedMessage
from rockmq.client.session import Endpoints, Session, received_batch, unreachable
from rockmq.client.transport import Transport
from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import batch, pb, receipt, rpc
from rockmq.protocol.conventions import check_lane
from rockmq.protocol.endpoints import address_of, endpoints_of


@dataclass(frozen=True)
class Filter:
    expression: str
    sql: bool = False

    @classmethod
    def tag(cls, expression: str = "*") -> Filter:
        return cls(expression)

    @classmethod
    def sql92(cls, expression: str) -> Filter:
        return cls(expression, sql=True)

    def to_pb(self) -> pb.FilterExpression:
        return pb.FilterExpression(type=pb.SQL if self.sql else pb.TAG, expression=self.expression)


class AsyncSimpleConsumer:
    def __init__(self, endpoint: Endpoints, group: str, subscriptions: dict[str, str | Filter], *,
                 await_s: float = LONG_POLL_S, request_timeout: float = REQUEST_TIMEOUT_S, client_id: str | None = None,
                 lane: str | None = None, transport: Transport | None = None,
                 credentials: Credentials | None = None, tls: Tls | None = None,
                 lite_refresh_s: float = LITE_REFRESH_S, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.group = group
        self.lane = check_lane(lane)
        self.subscriptions = {t: f if isinstance(f, Filter) else Filter.tag(f) for t, f in subscriptions.items()}
        self.await_s = await_s
        self.session = Session(endpoint, request_timeout, client_id, self.lane, transport, credentials, tls)
        self._turn = itertools.count()
        self._assigned: dict[str, tuple[float, list[pb.MessageQueue]]] = {}
        self._streaming_only: set[str] = set()  # endpoints without BatchMessaging (not rockmq)
        self._handles_only: set[str] = set()  # endpoints whose Ack takes no receipt runs (rockmq before them)
        self.lite = LiteSubscriptions(self.session, group, pb.SIMPLE_CONSUMER, lite_refresh_s, heartbeat_s)

    async def __aenter__(self) -> AsyncSimpleConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.lite.close()
        if self.lane is not None and not self.session.closed:  # its lane's messages fall back to the base at once
            request = rpc.NotifyClientTerminationRequest(group=pb.Resource(name=self.group))
            for endpoint in {address_of(q.broker.endpoints) for _, queues in self._assigned.values() for q in queues}:
                with contextlib.suppress(RockmqError):
                    await self.session.unary(endpoint, "NotifyClientTermination", request)
        await self.session.close()

    async def subscribe_lite(self, name: str, topic: str | None = None) -> None:
        """Receive lite topic `name` of the subscribed LITE topic (`topic`: needed only when the
        consumer subscribes several). QuotaExceeded when the client holds its quota of them."""
        await self.lite.subscribe(parent_topic(self.subscriptions, topic), name)

    async def unsubscribe_lite(self, name: str, topic: str | None = None) -> None:
        """Stop receiving lite topic `name` (what this client holds in flight still needs its ack)."""
        await self.lite.unsubscribe(parent_topic(self.subscriptions, topic), name)

    async def _assignments(self, topic: str) -> list[pb.MessageQueue]:
        """Where to receive the topic from (one entry per broker), cached for ASSIGNMENT_TTL_S."""
        cached = self._assigned.get(topic)
        if cached is not None and time.monotonic() - cached[0] < ASSIGNMENT_TTL_S:
            return cached[1]
        reply = await self.session.ask("QueryAssignment", lambda at: rpc.QueryAssignmentRequest(
            topic=pb.Resource(name=topic), group=pb.Resource(name=self.group), endpoints=endpoints_of(at)))
        queues = [a.message_queue for a in reply.assignments]
        self.session.learn(address_of(q.broker.endpoints) for q in queues)
        self._assigned[topic] = (time.monotonic(), queues)
        return queues

    async def receive(self, max_messages: int = BATCH_SIZE, invisible_s: float = INVISIBLE_S) -> list[ReceivedMessage]:
        """Up to `max_messages`, invisible to the group's other consumers for `invisible_s`. A
        broker that cannot be reached is passed over (and the topic's assignment asked again next
        time); its error is raised only if no broker had messages. A draining one (PROXY_TIMEOUT)
        is passed over without an error: it is leaving on purpose, the next assignment omits it."""
        topics = list(self.subscriptions)
        start = next(self._turn)
        unreached: RockmqError | None = None
        for i in range(len(topics)):
            topic = topics[(start + i) % len(topics)]
            queues = await self._assignments(topic)
            for j, queue in enumerate(queues):
                last = i == len(topics) - 1 and j == len(queues) - 1
                try:
                    got = await self._receive_from(queue, topic, max_messages, invisible_s, poll=last)
                except RockmqError as e:
                    self._assigned.pop(topic, None)
                    if not unreachable(e):
                        raise
                    if e.code != pb.PROXY_TIMEOUT:
                        unreached = e
                    continue
                if got:
                    return got
        if unreached is not None:
            raise unreached
        return []

    async def _receive_from(self, queue: pb.MessageQueue, topic: str, n: int, invisible_s: float,
                            poll: bool) -> list[ReceivedMessage]:
        """One reply of many messages from rockmq (BatchMessaging.Receive); the RocketMQ stream,
        one frame per message, from a broker without it."""
        endpoint = address_of(queue.broker.endpoints)
        wait = self.await_s if poll else 0
        if endpoint not in self._streaming_only:
            batched = batch.ReceiveRequest(group=self.group, topic=topic, filter_expression=self.subscriptions[topic].to_pb(),
                                           batch_size=n, invisible_duration_ms=int(invisible_s * 1000),
                                           long_polling_timeout_ms=int(wait * 1000))
            try:
                reply = await self.session.batch(endpoint, "Receive", batched, wait + self.session.request_timeout_s)
            except Unimplemented:
                self._streaming_only.add(endpoint)
            else:
                return ReceivedMessage.many(received_batch(reply).messages, topic, queue.broker.name, endpoint)
        request = rpc.ReceiveMessageRequest(group=pb.Resource(name=self.group), message_queue=queue,
                                            filter_expression=self.subscriptions[topic].to_pb(), batch_size=n)
        request.invisible_duration.FromMilliseconds(int(invisible_s * 1000))
        request.long_polling_timeout.FromMilliseconds(int(wait * 1000))
        out = []
        async for frame in self.session.stream(endpoint, "ReceiveMessage", request, wait + self.session.request_timeout_s):
            kind = frame.WhichOneof("content")
            if kind == "status" and frame.status.code not in (pb.OK, pb.MESSAGE_NOT_FOUND):
                raise from_status(frame.status.code, frame.status.message)
            if kind == "message":
                out.append(ReceivedMessage.from_pb(frame.message, queue.broker.name, endpoint))
        return out

    async def ack(self, message: ReceivedMessage) -> None:
        """Done with it: it is not delivered to this group again."""
        for _, error in await self.ack_many([message]):
            raise error

    async def ack_many(self, messages: Sequence[ReceivedMessage]) -> list[tuple[ReceivedMessage, BrokerRefused]]:
        """Ack many in one request per broker and topic (several past `receipt.MAX_ACK_ENTRIES`); -> the
        messages the broker refused (their receipt handle expired: they come again), with why.
        Transport errors raise."""
        parts: list[tuple[str, str, Sequence[ReceivedMessage]]]
        if messages and len({m.endpoint for m in messages}) == 1 and len({m.topic for m in messages}) == 1:
            parts = [(messages[0].endpoint, messages[0].topic, messages)]  # one receive's: no tuple per message
        else:
            grouped: dict[tuple[str, str], list[ReceivedMessage]] = {}
            for m in messages:
                grouped.setdefault((m.endpoint, m.topic), []).append(m)
            parts = [(endpoint, topic, part) for (endpoint, topic), part in grouped.items()]
        refused = []
        for endpoint, topic, whole in parts:
            for at in range(0, len(whole), receipt.MAX_ACK_ENTRIES):  # what a broker takes in one request
                part = whole[at:at + receipt.MAX_ACK_ENTRIES]
                statuses = await self._ack(endpoint, topic, part)
                refused += [(m, from_status(st.code, st.message)) for m, st in zip(part, statuses, strict=False)
                            if st.code != pb.OK]
        return refused

    async def _ack(self, endpoint: str, topic: str, part: Sequence[ReceivedMessage]) -> Sequence[pb.Status]:
        """One ack request -> a status per message (BatchMessaging.Ack, or AckMessage from a broker
        without it); none when the reply's status says every one was accepted."""
        if endpoint not in self._streaming_only:
            handles = [m.receipt_handle for m in part]
            try:
                reply = await self._batch_ack(endpoint, topic, handles)
            except Unimplemented:
                self._streaming_only.add(endpoint)
            else:
                return () if reply.status.code == pb.OK else reply.entries
        request = rpc.AckMessageRequest(group=pb.Resource(name=self.group), topic=pb.Resource(name=topic),
                                        entries=[rpc.AckMessageEntry(message_id=m.message_id, receipt_handle=m.receipt_handle,
                                                                     lite_topic=m.lite_topic) for m in part])
        reply = await self.session.unary(endpoint, "AckMessage", request, entries=len(part))
        return [e.status for e in reply.entries]

    async def _batch_ack(self, endpoint: str, topic: str, handles: list[str]) -> Any:
        """BatchMessaging.Ack of `handles`, sent in short (`receipt.runs`: the token of a receive's
        handles once, then entry numbers) unless the broker answers that form with fewer entries
        than handles: one before it, which ignored them all (acked nothing); then as they are."""
        if endpoint not in self._handles_only:
            try:
                runs = [batch.ReceiptRun(token=token, entries=entries) for token, entries in receipt.runs(handles)]
            except ValueError:  # not handles of rockmq's shape: as they are
                pass
            else:
                reply = await self.session.batch(endpoint, "Ack", batch.AckRequest(group=self.group, topic=topic,
                                                                                   receipt_runs=runs), entries=len(handles))
                if len(reply.entries) == len(handles):
                    return reply
                self._handles_only.add(endpoint)
        return await self.session.batch(endpoint, "Ack", batch.AckRequest(group=self.group, topic=topic,
                                                                          receipt_handles=handles), entries=len(handles))

    async def change_invisible_duration(self, message: ReceivedMessage, invisible_s: float) -> ReceivedMessage:
        """Come back in `invisible_s` (0: at once); -> the message with its new receipt handle."""
        request = rpc.ChangeInvisibleDurationRequest(group=pb.Resource(name=self.group),
                                                     topic=pb.Resource(name=message.topic),
                                                     receipt_handle=message.receipt_handle,
                                                     message_id=message.message_id, lite_topic=message.lite_topic)
        request.invisible_duration.FromMilliseconds(int(invisible_s * 1000))
        reply = await self.session.unary(message.endpoint, "ChangeInvisibleDuration", request)
        return message.replace(receipt_handle=reply.receipt_handle)
