"""rockmq's BatchMessaging servicer: POP receive, ack and pull with many messages per reply.

The same services as MessagingService, minus the one-message-per-response streaming: for
rockmq's own client, the Spark source and the benchmark. Fetch hands out stored records as they
are, so that a bulk reader (the Spark source) decodes them in its own processes, in bulk, and the
broker does no per-message work beyond the scan. Stage / PublishStaged / DiscardStaged are the
Spark sink's exactly-once writes (broker/staging.py).
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf.message import Message

from rockmq.auth.access import AccessControl
from rockmq.auth.seam import identity
from rockmq.broker.api.replies import OK, entry_results, found_status, serialized, unary
from rockmq.broker.clients import Clients
from rockmq.broker.context import BrokerContext
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.broker.staging import StagingService
from rockmq.broker.subscriptions import record_filter
from rockmq.plumbing.requests import Context, client_id, header, poll_seconds
from rockmq.plumbing.unparsed import generic_handler
from rockmq.protocol import batch, batch_grpc, pb
from rockmq.protocol.consume_replies import ack_reply, messages_reply, received_reply
from rockmq.protocol.conventions import BATCH_SERVICE, LANE_HEADER
from rockmq.protocol.errors import BrokerError
from rockmq.protocol.fetch import encode_fetch_response

METHODS: dict[str, tuple[type[Message], type[Message]]] = {
    "Stage": (batch.StageRequest, batch.StageResponse),
    "PublishStaged": (batch.PublishStagedRequest, batch.PublishStagedResponse),
    "DiscardStaged": (batch.DiscardStagedRequest, batch.DiscardStagedResponse),
}
# These answer with replies serialized already (protocol/consume_replies.py, protocol/fetch.py), or a refusal.
SERIALIZED: dict[str, type[Message]] = {
    "Receive": batch.ReceiveRequest, "Ack": batch.AckRequest, "Pull": batch.PullRequest, "Fetch": batch.FetchRequest}

class BatchServicer(batch_grpc.BatchMessagingServicer):
    def __init__(self, ctx: BrokerContext, clients: Clients, pop: PopService, pull: PullService,
                 staging: StagingService | None = None, access: AccessControl | None = None) -> None:
        self.ctx = ctx
        self.clients = clients
        self.pop = pop
        self.puller = pull
        self.staging = staging  # staged writes (the Spark sink); None: refused
        self.access = access  # auth on: PublishStaged's Pub on the chunks' topics (auth/access.py)

    def _poll_seconds(self, request: batch.ReceiveRequest | batch.PullRequest, context: Context) -> float:
        return poll_seconds(max(request.long_polling_timeout_ms, 0) / 1000, self.ctx.settings.max_long_polling_s, context)

    @unary(batch.ReceiveResponse)
    async def Receive(self, request: batch.ReceiveRequest, context: Context) -> bytes:
        group = self.ctx.group_for(request.group)
        topic = self.ctx.meta.topic(request.topic)
        messages = await self.pop.receive(group, topic, request.filter_expression, request.batch_size,
                                          request.invisible_duration_ms, self._poll_seconds(request, context),
                                          client_id(context), header(context, LANE_HEADER))
        return received_reply(found_status(bool(messages)), messages)

    @unary(batch.AckResponse)
    async def Ack(self, request: batch.AckRequest, context: Context) -> bytes:
        group = self.ctx.meta.group(request.group)
        topic = self.ctx.meta.topic(request.topic)
        runs = [(run.token, run.entries) for run in request.receipt_runs]
        return ack_reply(*entry_results(self.pop.ack(group, topic, list(request.receipt_handles), runs)))

    @unary(batch.PullResponse)
    async def Pull(self, request: batch.PullRequest, context: Context) -> bytes:
        topic = self.ctx.meta.topic(request.topic)
        messages, next_offset = await self.puller.pull(request.group, topic, request.queue_id, request.offset,
                                                       request.batch_size, record_filter(request.filter_expression),
                                                       self._poll_seconds(request, context), request.max_bytes,
                                                       client_id(context), header(context, LANE_HEADER))
        return messages_reply(found_status(bool(messages)), messages, next_offset)

    def handler(self) -> grpc.GenericRpcHandler:
        """The service's methods."""
        methods: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            name: grpc.unary_unary_rpc_method_handler(getattr(self, name), request.FromString, response.SerializeToString)
            for name, (request, response) in METHODS.items()}
        for name, request in SERIALIZED.items():
            methods[name] = grpc.unary_unary_rpc_method_handler(getattr(self, name), request.FromString, serialized)
        return generic_handler(BATCH_SERVICE, methods)

    @unary(batch.FetchResponse)
    async def Fetch(self, request: batch.FetchRequest, context: Context) -> bytes | batch.FetchResponse:
        topic = self.ctx.meta.topic(request.topic)
        first, values, lo, hi = await self.puller.fetch(topic, request.queue_id, request.offset, request.end_offset,
                                                        request.max_records, request.max_bytes)
        return encode_fetch_response(OK, first, values, lo, hi)

    # --- staged writes, published once per (sink, batch): broker/staging.py ---------------------

    def _staging(self) -> StagingService:
        if self.staging is None:
            raise BrokerError(pb.NOT_IMPLEMENTED, "this broker takes no staged writes")
        return self.staging

    @unary(batch.StageResponse)
    async def Stage(self, request: batch.StageRequest, context: Context) -> batch.StageResponse:
        handle, count = self._staging().stage(request.system_properties, request.contents, request.ttl_ms, request.deduplicate,
                                              identity(context).user)
        return batch.StageResponse(status=OK, handle=handle, count=count)

    @unary(batch.PublishStagedResponse)
    async def PublishStaged(self, request: batch.PublishStagedRequest, context: Context) -> batch.PublishStagedResponse:
        """Only the chunks' stager may publish them, with Pub on their topics, as its own sink."""
        user = identity(context).user
        staging = self._staging()
        handles = [c.handle for c in request.chunks]
        staging.check_owner(handles, user)
        if self.access is not None:
            self.access.check_publish_staged(staging.chunk_topics(handles))
        duplicate, published, deduplicated = await staging.publish(
            request.sink_id, request.batch_id, [(c.handle, c.count) for c in request.chunks], request.retain_ms, user)
        return batch.PublishStagedResponse(status=OK, duplicate=duplicate, published=published, deduplicated=deduplicated)

    @unary(batch.DiscardStagedResponse)
    async def DiscardStaged(self, request: batch.DiscardStagedRequest, context: Context) -> batch.DiscardStagedResponse:
        self._staging().check_owner(request.handles, identity(context).user)
        self._staging().discard(request.handles)
        return batch.DiscardStagedResponse(status=OK)
