"""rockmq's BatchMessaging servicer: POP receive, ack and pull with many messages per reply.

The same services as MessagingService, minus the one-message-per-response streaming: for
rockmq's own client, the Spark source and the benchmark.
"""

from __future__ import annotations

from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import check_name
from rockmq.broker.pop import PopService
from rockmq.broker.pull import PullService
from rockmq.broker.servicer import OK, multi_status, poll_seconds, status, unary
from rockmq.broker.subscriptions import Subscriptions, record_filter
from rockmq.protocol import batch, batch_grpc, pb


class BatchServicer(batch_grpc.BatchMessagingServicer):
    def __init__(self, ctx: BrokerContext, pop: PopService, pull: PullService, subscriptions: Subscriptions) -> None:
        self.ctx = ctx
        self.subscriptions = subscriptions
        self.pop = pop
        self.puller = pull

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
