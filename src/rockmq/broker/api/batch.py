"""rockmq's BatchMessaging servicer: POP receive, ack and pull with many messages per reply.

The same services as MessagingService, minus the one-message-per-response streaming: for
rockmq's own client, the Spark source and the benchmark. Fetch hands out stored records as they
are, so that a bulk reader (the Spark source) decodes them in its own processes, in bulk, and the
broker does no per-message work beyond the scan. Stage / PublishStaged / DiscardStaged are the
Spark sink's exactly-once writes (broker/staging.py).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from array import array

import grpc

from rockmq.broker.api.messaging import OK, multi_status, poll_seconds, status, unary
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import TopicConfig, check_name
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.broker.staging import StagingService
from rockmq.broker.subscriptions import Subscriptions, record_filter
from rockmq.protocol import batch, batch_grpc, pb
from rockmq.protocol.fetch import encode_fetch_response
from rockmq.store import keys

FETCH_SLICE = 1024  # records read between two turns of the event loop (a few ms)
SERVICE = "rockmq.messaging.v1.BatchMessaging"
METHODS = {  # but Fetch
    "Receive": (batch.ReceiveRequest, batch.ReceiveResponse),
    "Ack": (batch.AckRequest, batch.AckResponse),
    "Pull": (batch.PullRequest, batch.PullResponse),
    "Stage": (batch.StageRequest, batch.StageResponse),
    "PublishStaged": (batch.PublishStagedRequest, batch.PublishStagedResponse),
    "DiscardStaged": (batch.DiscardStagedRequest, batch.DiscardStagedResponse),
}


class BatchServicer(batch_grpc.BatchMessagingServicer):
    def __init__(self, ctx: BrokerContext, pop: PopService, pull: PullService, subscriptions: Subscriptions,
                 staging: StagingService | None = None) -> None:
        self.ctx = ctx
        self.subscriptions = subscriptions
        self.pop = pop
        self.puller = pull
        self.staging = staging  # staged writes (the Spark sink); None: refused

    def _poll_seconds(self, request, context) -> float:
        return poll_seconds(max(request.long_polling_timeout_ms, 0) / 1000, self.ctx.settings.max_long_polling_s, context)

    @unary(batch.ReceiveResponse)
    async def Receive(self, request, context):
        group = self.ctx.group_for(request.group)
        topic = self.ctx.meta.topic(request.topic)
        sub = self.subscriptions.resolve(group, topic, request.filter_expression)
        messages = await self.pop.receive(group, topic, sub, request.batch_size or 32,
                                          request.invisible_duration_ms, self._poll_seconds(request, context))
        code = status(pb.OK) if messages else status(pb.MESSAGE_NOT_FOUND, "no new message")
        return batch.ReceiveResponse(status=code, messages=messages)

    @unary(batch.AckResponse)
    async def Ack(self, request, context):
        group = self.ctx.meta.group(request.group)
        topic = self.ctx.meta.topic(request.topic)
        results = self.pop.ack(group, topic, list(request.receipt_handles))
        entries = [OK if r is None else status(r.code, r.message) for r in results]
        return batch.AckResponse(status=multi_status(entries), entries=entries)

    @unary(batch.PullResponse)
    async def Pull(self, request, context):
        check_name("group", request.group)
        topic = self.ctx.meta.topic(request.topic)
        if request.batch_size < 0:
            raise BrokerError(pb.BAD_REQUEST, "batch_size must not be negative")
        messages, next_offset = await self.puller.pull(topic, request.queue_id, request.offset, request.batch_size or 32,
                                                       record_filter(request.filter_expression),
                                                       self._poll_seconds(request, context))
        code = status(pb.OK) if messages else status(pb.MESSAGE_NOT_FOUND, "no new message")
        return batch.PullResponse(status=code, messages=messages, next_offset=next_offset)

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's methods; Fetch answers with a reply already serialized (or a
        FetchResponse with an error status)."""
        methods = {name: grpc.unary_unary_rpc_method_handler(getattr(self, name), request.FromString,
                                                             response.SerializeToString)
                   for name, (request, response) in METHODS.items()}
        methods["Fetch"] = grpc.unary_unary_rpc_method_handler(
            self.Fetch, batch.FetchRequest.FromString, lambda r: r if isinstance(r, bytes) else r.SerializeToString())
        return grpc.method_handlers_generic_handler(SERVICE, methods)

    @unary(batch.FetchResponse)
    async def Fetch(self, request, context):
        topic = self.ctx.meta.topic(request.topic)
        qid = request.queue_id
        if not 0 <= qid < topic.queues:
            raise BrokerError(pb.BAD_REQUEST, f"topic {topic.name!r} has queues 0..{topic.queues - 1}, not {qid}")
        if request.max_records < 0 or request.max_bytes < 0:
            raise BrokerError(pb.BAD_REQUEST, "max_records and max_bytes must not be negative")
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, qid), logs.max_offset(topic.id, qid)
        start = max(request.offset, lo)
        end = hi if request.end_offset <= 0 else min(request.end_offset, hi)
        first, values = await self._read_range(topic, qid, start, end, request) if start < end else (start, [])
        ends = array("i", itertools.accumulate(map(len, values), initial=0))
        if sys.byteorder == "big":
            ends.byteswap()
        return encode_fetch_response(status(pb.OK), first, values, ends.tobytes(), lo, hi)

    async def _read_range(self, topic: TopicConfig, qid: int, start: int, end: int,
                          request: batch.FetchRequest) -> tuple[int, list[bytes]]:
        """Records of [start, end) within the request's caps -> (offset of the first, records)."""
        s = self.ctx.settings
        limit = min(request.max_records or s.fetch_records, s.max_fetch_records, end - start)
        max_bytes = min(request.max_bytes or s.fetch_bytes, s.max_fetch_bytes)
        values: list[bytes] = []
        size = 0
        first = last = b""
        scan = self.ctx.store.scan("log", keys.log_key(topic.id, qid, start), keys.log_key(topic.id, qid, end), limit)
        for i, (key, value) in enumerate(scan, 1):  # the iterator reads a snapshot: pausing in between is safe
            if values and size + len(value) > max_bytes:
                break
            if not values:
                first = key
            values.append(value)
            size += len(value)
            last = key
            if i % FETCH_SLICE == 0:
                await asyncio.sleep(0)  # a big fetch does not hold up every other client of the broker
        if not values:
            return start, values
        # Offsets are dense (retention removes a queue's oldest records only), so the first and
        # last keys vouch for every one between; a race with retention shows in the first.
        first_offset = keys.parse_log_key(first)[2]
        if keys.parse_log_key(last)[2] != first_offset + len(values) - 1:
            raise BrokerError(pb.INTERNAL_ERROR, f"queue {qid} of topic {topic.name!r} has a gap in its offsets")
        return first_offset, values

    # --- staged writes, published once per (sink, batch): broker/staging.py ---------------------

    def _staging(self) -> StagingService:
        if self.staging is None:
            raise BrokerError(pb.NOT_IMPLEMENTED, "this broker takes no staged writes")
        return self.staging

    @unary(batch.StageResponse)
    async def Stage(self, request, context):
        handle, count = self._staging().stage(request.system_properties, request.contents, request.ttl_ms, request.deduplicate)
        return batch.StageResponse(status=OK, handle=handle, count=count)

    @unary(batch.PublishStagedResponse)
    async def PublishStaged(self, request, context):
        duplicate, published, deduplicated = await self._staging().publish(
            request.sink_id, request.batch_id, [(c.handle, c.count) for c in request.chunks], request.retain_ms)
        return batch.PublishStagedResponse(status=OK, duplicate=duplicate, published=published, deduplicated=deduplicated)

    @unary(batch.DiscardStagedResponse)
    async def DiscardStaged(self, request, context):
        self._staging().discard(request.handles)
        return batch.DiscardStagedResponse(status=OK)
