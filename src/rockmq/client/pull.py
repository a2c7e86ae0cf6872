"""AsyncPullConsumer: read queues by offset and keep your own position (PullMessage with long
polling, GetOffset / UpdateOffset for the group's committed offsets, QueryOffset to find one).

The push consumer is built on it; use it directly when you decide what to read and when, as a
stream processor does. Against rockmq a pull is one BatchMessaging.Pull reply carrying many
messages (a fraction of the CPU of one stream frame per message); a broker without that service
(Apache RocketMQ's proxy) is read with PullMessage instead, decided once per endpoint.

With `lane="dev1"` the consumer reads only lane `dev1`'s messages and keeps its offsets under
`<group>%LANE%dev1`; a base consumer (no lane) reads the rest and the messages of lanes with no
live member. The broker decides (docs/client.md "Environment lanes").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rockmq.client.consumer import Filter
from rockmq.client.errors import IllegalArgument, NotFound, Unimplemented, from_status
from rockmq.client.limits import BATCH_SIZE, REQUEST_TIMEOUT_S
from rockmq.client.message import ReceivedMessage
from rockmq.client.queues import Queue
from rockmq.client.session import Endpoints, Session, received_batch
from rockmq.client.transport import Transport
from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.conventions import check_lane, lane_group
from rockmq.when import instant_ms, parse_instant_ms


@dataclass(frozen=True)
class PullResult:
    messages: list[ReceivedMessage]
    next_offset: int  # where the next pull starts (past filtered-out messages too)


def _time_ms(where: str | datetime | int) -> int:
    try:
        if isinstance(where, datetime):
            return instant_ms(where)
        if isinstance(where, str):
            return parse_instant_ms(where)
    except ValueError as e:
        raise IllegalArgument(f"offset_at: {e}") from None
    if isinstance(where, int) and not isinstance(where, bool):
        return where
    raise IllegalArgument(f"offset_at takes 'earliest', 'latest', a datetime, ISO 8601 text or ms, not {where!r}")


def _queue_pb(queue: Queue) -> pb.MessageQueue:
    return pb.MessageQueue(topic=pb.Resource(name=queue.topic), id=queue.queue_id, broker=pb.Broker(name=queue.broker))


class AsyncPullConsumer:
    def __init__(self, endpoint: Endpoints, group: str, *, request_timeout: float = REQUEST_TIMEOUT_S,
                 client_id: str | None = None, lane: str | None = None, transport: Transport | None = None,
                 credentials: Credentials | None = None, tls: Tls | None = None) -> None:
        self.lane = check_lane(lane)
        self.group = lane_group(group, self.lane)  # a lane's offsets are its own
        self.session = Session(endpoint, request_timeout, client_id, self.lane, transport, credentials, tls)
        self._streaming_only: set[str] = set()  # endpoints without BatchMessaging

    async def __aenter__(self) -> AsyncPullConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.session.close()

    async def queues(self, topic: str) -> list[Queue]:
        """Every queue of the topic, on every broker."""
        return await self.session.route(topic)

    async def pull(self, queue: Queue, offset: int, *, max_messages: int = BATCH_SIZE, filter: str | Filter = "*",
                   poll_s: float = 0.0, max_bytes: int = 0) -> PullResult:
        """Messages from `offset` on; waits up to `poll_s` for the first one to arrive. With
        `max_bytes`, rockmq sends no more bytes of messages than that (but always one message, if
        any is there); a broker without BatchMessaging ignores it."""
        f = filter if isinstance(filter, Filter) else Filter.tag(filter)
        if queue.endpoint not in self._streaming_only:
            request = batch.PullRequest(group=self.group, topic=queue.topic, queue_id=queue.queue_id, offset=offset,
                                        batch_size=max_messages, filter_expression=f.to_pb(),
                                        long_polling_timeout_ms=int(poll_s * 1000), max_bytes=max_bytes)
            try:
                reply = await self.session.batch(queue.endpoint, "Pull", request, poll_s + self.session.request_timeout_s)
            except Unimplemented:
                self._streaming_only.add(queue.endpoint)
            else:
                reply = received_batch(reply)
                return PullResult(ReceivedMessage.many(reply.messages, queue.topic, queue.broker, queue.endpoint),
                                  reply.next_offset)
        return await self._pull_streaming(queue, offset, max_messages, f, poll_s)

    async def _pull_streaming(self, queue: Queue, offset: int, max_messages: int, f: Filter, poll_s: float) -> PullResult:
        request = rpc.PullMessageRequest(group=pb.Resource(name=self.group), message_queue=_queue_pb(queue), offset=offset,
                                         batch_size=max_messages, filter_expression=f.to_pb())
        request.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        out: list[ReceivedMessage] = []
        next_offset = offset
        async for frame in self.session.stream(queue.endpoint, "PullMessage", request, poll_s + self.session.request_timeout_s):
            kind = frame.WhichOneof("content")
            if kind == "status" and frame.status.code not in (pb.OK, pb.MESSAGE_NOT_FOUND):
                raise from_status(frame.status.code, frame.status.message)
            if kind == "message":
                out.append(ReceivedMessage.from_pb(frame.message, queue.broker, queue.endpoint))
            elif kind == "next_offset":
                next_offset = frame.next_offset
        return PullResult(out, next_offset)

    async def committed(self, queue: Queue) -> int | None:
        """The group's committed offset of the queue (the next one to read); None if never committed."""
        request = rpc.GetOffsetRequest(group=pb.Resource(name=self.group), message_queue=_queue_pb(queue))
        try:
            reply: rpc.GetOffsetResponse = await self.session.unary(queue.endpoint, "GetOffset", request)
        except NotFound:
            return None
        return reply.offset

    async def commit(self, queue: Queue, offset: int) -> None:
        """Record that the group has processed everything before `offset` in the queue."""
        request = rpc.UpdateOffsetRequest(group=pb.Resource(name=self.group), message_queue=_queue_pb(queue), offset=offset)
        await self.session.unary(queue.endpoint, "UpdateOffset", request)

    async def offset_at(self, queue: Queue, where: str | datetime | int) -> int:
        """`"earliest"`, `"latest"`, or the first offset stored at or after a time: a datetime with
        a zone, ISO 8601 text with a zone, or ms since the epoch."""
        request = rpc.QueryOffsetRequest(message_queue=_queue_pb(queue))
        if where == "earliest":
            request.query_offset_policy = pb.BEGINNING
        elif where == "latest":
            request.query_offset_policy = pb.END
        else:
            request.query_offset_policy = pb.TIMESTAMP
            request.timestamp.FromMilliseconds(_time_ms(where))
        reply: rpc.QueryOffsetResponse = await self.session.unary(queue.endpoint, "QueryOffset", request)
        return reply.offset
