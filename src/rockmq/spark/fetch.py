"""The Spark source's broker calls, synchronous and with deadlines: queue discovery and offset
lookups (planner side), and reading a queue range as Arrow record batches (executor side).

Readers are pickled into Spark's Python workers, so nothing here holds a channel: channels live
in the per-process cache of plumbing/channels.py, created on first use in the worker (workers are
reused across tasks, and forked: a child never reuses its parent's channel).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import grpc

from rockmq.client.errors import NotFound, from_rpc_error, from_status
from rockmq.plumbing.channels import ChannelCache, Dial, Tls, channel, client_metadata
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, batch, pb, rpc, svc
from rockmq.protocol.endpoints import address_of, endpoints_of
from rockmq.protocol.fetch import FetchReply, parse_fetch_response
from rockmq.spark.offsets import QueueState

log = logging.getLogger(__name__)
META = client_metadata("rockmq-spark")
ATTEMPTS = 3  # metadata calls: a failed latestOffset fails the whole streaming query
LITE = "LITE"  # a topic of this message type holds lite topics
LITE_PAGE = 1000  # lite topics per ListLiteTopics call (the broker's most)
T = TypeVar("T")



class SourceError(RuntimeError):
    """The rockmq source cannot go on (broker unreachable, bad option, data lost...)."""


class DataLossError(SourceError):
    """Messages the query was to read are gone (retention, or the topic was recreated)."""


class _NotFound(SourceError):
    pass


def _retry(what: str, endpoint: str, call: Callable[[], T]) -> T:
    for attempt in range(ATTEMPTS):
        try:
            return call()
        except grpc.RpcError as e:
            error = from_rpc_error(endpoint, e)
            if isinstance(error, NotFound):
                raise _NotFound(f"rockmq {what} at {endpoint}: {error.message}") from None
            if not error.retriable or attempt == ATTEMPTS - 1:
                raise SourceError(f"rockmq {what} at {endpoint} failed: {e.code().name}: {e.details()}") from None
            time.sleep(0.2 * 2 ** attempt)
    raise AssertionError("unreachable")


class Brokers:
    """What the planner asks: a topic's queues with their stored ranges, offsets by time."""

    def __init__(self, endpoint: str, timeout_s: float, tls: Tls | None = None, credentials: Credentials | None = None) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self.tls = tls
        self.credentials = credentials
        self.listed_lite: set[str] = set()  # LITE topics whose every lite topic `queues` listed (no broker missing)

    def _channel(self, endpoint: str) -> grpc.Channel:
        return channel(endpoint, self.tls, self.credentials)

    def queues(self, topic: str, *, strict: bool = False) -> list[QueueState]:
        """Every queue of `topic` on every broker; [] if no broker has the topic (without
        creating it, as QueryRoute would with auto-creation on). A broker that did not answer
        or is missing from the route (down, leaving the cluster) is an error if `strict` (a batch
        read would silently lack its queues); else its queues are left out for now (a stream
        keeps their positions and reads them once the broker is back)."""
        try:
            admin_stub = admin_grpc.AdminStub(self._channel(self.endpoint))
            info = _retry(f"DescribeTopic {topic!r}", self.endpoint,
                          lambda: admin_stub.DescribeTopic(admin.TopicRequest(name=topic), timeout=self.timeout_s))
        except _NotFound:
            return []
        if info.unreachable:
            down = ", ".join(info.unreachable)
            if strict:
                raise SourceError(f"broker(s) {down} of topic {topic!r} did not answer: their queues cannot be read")
            log.warning("rockmq: broker(s) %s of topic %r did not answer; skipping their queues for now", down, topic)
        request = rpc.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=endpoints_of(self.endpoint))
        route = _retry(f"QueryRoute {topic!r}", self.endpoint, lambda: svc.MessagingServiceStub(self._channel(self.endpoint))
                       .QueryRoute(request, metadata=META, timeout=self.timeout_s))
        if route.status.code != pb.OK:
            raise SourceError(f"rockmq QueryRoute {topic!r} at {self.endpoint}: {route.status.message}")
        where = {q.broker.name: address_of(q.broker.endpoints) for q in route.message_queues}
        if LITE in info.message_types:  # its lite topics are its queues that hold messages
            return self._lite_queues(topic, where, strict)
        out = []
        for q in info.queues:
            broker = q.broker or next(iter(where), "")
            if broker not in where:
                if strict:
                    raise SourceError(f"broker {broker!r} holds queues of topic {topic!r} but is not in its route")
                log.warning("rockmq: broker %r of topic %r is not in its route; skipping its queues for now", broker, topic)
                continue
            out.append(QueueState(topic, broker, q.queue_id, where[broker], q.min_offset, q.max_offset))
        return sorted(out, key=lambda s: (s.broker, s.queue_id))

    def _lite_queues(self, topic: str, where: dict[str, str], strict: bool) -> list[QueueState]:
        """The lite topics of LITE topic `topic`, each as the queue it is: every page of ListLiteTopics.
        A broker that did not answer or is missing from the route is an error if `strict`, else its
        lite topics are left out for now (and the listing is not complete: `listed_lite`)."""
        admin_stub = admin_grpc.AdminStub(self._channel(self.endpoint))
        out, after, complete = [], "", True
        while True:
            page = _retry(f"ListLiteTopics {topic!r}", self.endpoint, functools.partial(
                admin_stub.ListLiteTopics, admin.ListLiteTopicsRequest(topic=topic, after=after, limit=LITE_PAGE),
                timeout=self.timeout_s))
            if page.unreachable and strict:
                raise SourceError(f"broker(s) {', '.join(page.unreachable)} of topic {topic!r} did not answer: "
                                  "their lite topics cannot be read")
            complete = complete and not page.unreachable
            for t in page.lite_topics:
                broker = t.broker or next(iter(where), "")
                if broker in where:
                    out.append(QueueState(topic, broker, t.queue_id, where[broker], t.min_offset, t.max_offset, t.name))
                elif strict:
                    raise SourceError(f"broker {broker!r} holds lite topics of {topic!r} but is not in its route")
                else:
                    complete = False
            if not page.more or not page.lite_topics:
                if complete:
                    self.listed_lite.add(topic)
                return sorted(out, key=lambda s: (s.broker, s.queue_id))
            after = page.lite_topics[-1].name

    def offset_at(self, queue: QueueState, timestamp_ms: int) -> int:
        """The first offset of the queue stored at or after `timestamp_ms` (its end if none)."""
        request = rpc.QueryOffsetRequest(
            message_queue=pb.MessageQueue(topic=pb.Resource(name=queue.topic), id=queue.queue_id,
                                          broker=pb.Broker(name=queue.broker)),
            query_offset_policy=pb.TIMESTAMP)
        request.timestamp.FromMilliseconds(timestamp_ms)
        reply: rpc.QueryOffsetResponse = _retry(f"QueryOffset {queue.topic}/{queue.key}", queue.endpoint,
                       lambda: svc.MessagingServiceStub(self._channel(queue.endpoint)).QueryOffset(request, metadata=META,
                                                                                              timeout=self.timeout_s))
        if reply.status.code != pb.OK:
            raise SourceError(f"rockmq QueryOffset {queue.topic}/{queue.key}: {reply.status.message}")
        return reply.offset


def _open_fetch(dial: Dial) -> grpc.UnaryUnaryMultiCallable[batch.FetchRequest, FetchReply]:
    return channel(*dial).unary_unary("/rockmq.messaging.v1.BatchMessaging/Fetch",
                                         request_serializer=batch.FetchRequest.SerializeToString,
                                         response_deserializer=parse_fetch_response)


_fetch_calls = ChannelCache(_open_fetch)


def fetch_replies(endpoint: str, topic: str, broker: str, queue_id: int, start: int, end: int, *, fail_on_data_loss: bool,
                  max_records: int = 0, max_bytes: int = 0, timeout_s: float = 30.0,
                  tls: Tls | None = None, credentials: Credentials | None = None) -> Iterator[FetchReply]:
    """Fetch replies covering [start, end) of a queue, in order, one request always in flight
    ahead of the caller (the broker reads the next range while the caller decodes this one).

    Messages retention removed before they were read are a DataLossError, or skipped with
    `fail_on_data_loss=False`; so is a range the queue no longer has (topic recreated)."""
    call = _fetch_calls.get((endpoint, tls, credentials))
    where = f"queue {broker}:{queue_id} of topic {topic!r}"

    def ask(offset: int) -> grpc.Future[FetchReply]:
        request = batch.FetchRequest(topic=topic, queue_id=queue_id, offset=offset, end_offset=end, max_records=max_records,
                                     max_bytes=max_bytes)
        return call.future(request, metadata=META, timeout=timeout_s)

    pos = start
    pending = ask(pos)
    while pos < end:
        try:
            reply = pending.result()
        except grpc.RpcError as e:
            raise SourceError(f"rockmq Fetch of {where} at {endpoint} failed: {e.code().name}: {e.details()}") from None
        if reply.code != pb.OK:
            raise SourceError(f"rockmq Fetch of {where}: {from_status(reply.code, reply.message)}")
        if reply.first_offset > pos:
            lost = f"messages [{pos}, {min(reply.first_offset, end)}) of {where} were removed (retention) before they were read"
            if fail_on_data_loss:
                raise DataLossError(f"{lost}; set the option failOnDataLoss=false to skip lost messages")
            log.warning("rockmq: %s; skipped (failOnDataLoss=false)", lost)
        if reply.count == 0:
            if reply.first_offset < end:  # the queue ends before the range does: it was recreated
                lost = (f"{where} now holds [{reply.min_offset}, {reply.max_offset}), not the planned [{pos}, {end}) "
                        "(topic deleted and recreated?)")
                if fail_on_data_loss:
                    raise DataLossError(f"{lost}; set the option failOnDataLoss=false to skip lost messages")
                log.warning("rockmq: %s; skipped (failOnDataLoss=false)", lost)
            return
        pos = reply.first_offset + reply.count
        if pos < end:
            pending = ask(pos)
        yield reply
