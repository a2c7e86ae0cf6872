"""The `apache.rocketmq.v2.MessagingService` servicer: translate requests, delegate, reply.

No messaging logic lives here. Every refusal is a reply with `status{code, message}` and gRPC
OK, as the official clients expect; an unexpected exception becomes INTERNAL_ERROR and is
logged, and the broker keeps serving. The streaming RPCs yield pre-encoded frames (messages
straight from the store), so their handlers are registered with a pass-through serializer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable

import grpc

from rockmq.broker.clients import Clients
from rockmq.broker.cluster.routes import Cluster, Holder, interleave
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import check_name
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.broker.send import SendService
from rockmq.broker.subscriptions import Subscriptions, record_filter
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import pb, records, rpc
from rockmq.protocol.conventions import LANE_HEADER
from rockmq.protocol.endpoints import endpoints_of

log = logging.getLogger(__name__)
SERVICE = "apache.rocketmq.v2.MessagingService"
DEADLINE_MARGIN_S = 0.5  # a long poll ends this long before the client's deadline
MESSAGE_FIELD = 2  # ReceiveMessageResponse.message / PullMessageResponse.message
TELEMETRY_BACKLOG = 64  # commands waiting for a slow client; beyond it pushes are dropped (checks repeat)


def status(code: int, message: str = "OK") -> pb.Status:
    return pb.Status(code=code, message=message)


OK = status(pb.OK)


def header(context: grpc.aio.ServicerContext, name: str) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == name:
            return value
    return ""


def client_id(context: grpc.aio.ServicerContext) -> str:
    return header(context, "x-mq-client-id")


def unary(response_type: type) -> Callable:
    """Wrap a unary handler: BrokerError -> reply with its status; crash -> INTERNAL_ERROR."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        async def handler(self, request, context):
            try:
                return await fn(self, request, context)
            except BrokerError as e:
                return response_type(status=status(e.code, e.message))
            except Exception:
                log.exception("%s failed", fn.__name__)
                return response_type(status=status(pb.INTERNAL_ERROR, "internal error; see the broker log"))

        return handler

    return wrap


def poll_seconds(asked_s: float | None, cap_s: float, context: grpc.aio.ServicerContext) -> float:
    """How long a long poll may wait: what the client asked (capped), ending before its deadline."""
    poll = cap_s if asked_s is None else min(cap_s, asked_s)
    remaining = context.time_remaining()
    if remaining is not None:
        poll = min(poll, remaining - DEADLINE_MARGIN_S)
    return max(0.0, poll)


def multi_status(statuses: list[pb.Status]) -> pb.Status:
    """The top-level status of a request with per-entry results."""
    if not statuses:
        return OK
    first = statuses[0]
    if all(st.code == first.code for st in statuses):
        return first
    return status(pb.MULTIPLE_RESULTS, "entries differ; see each")


def _status_frame(response_type: type, code: int, message: str) -> bytes:
    return response_type(status=status(code, message)).SerializeToString()


def _now_frame(response_type: type) -> bytes:
    frame = response_type()
    frame.delivery_timestamp.GetCurrentTime()
    return frame.SerializeToString()


UNARY_METHODS = {
    name: (getattr(rpc, f"{name}Request"), getattr(rpc, f"{name}Response"))
    for name in ("QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "AckMessage", "ForwardMessageToDeadLetterQueue",
                 "UpdateOffset", "GetOffset", "QueryOffset", "EndTransaction", "NotifyClientTermination",
                 "ChangeInvisibleDuration", "RecallMessage", "SyncLiteSubscription")
}


class MessagingServicer:
    def __init__(self, ctx: BrokerContext, send: SendService, pop: PopService, pull: PullService,
                 timers: TimerService, transactions: TransactionService, clients: Clients,
                 subscriptions: Subscriptions, cluster: Cluster) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.subscriptions = subscriptions
        self.sender = send
        self.transactions = transactions
        self.pop = pop
        self.puller = pull
        self.timers = timers
        self.clients = clients

    def handler(self) -> grpc.GenericRpcHandler:
        methods = {
            name: grpc.unary_unary_rpc_method_handler(getattr(self, name), request.FromString, response.SerializeToString)
            for name, (request, response) in UNARY_METHODS.items()
        }
        raw = lambda frame: frame  # noqa: E731 - streamed frames are already encoded
        for name, request in (("ReceiveMessage", rpc.ReceiveMessageRequest), ("PullMessage", rpc.PullMessageRequest)):
            methods[name] = grpc.unary_stream_rpc_method_handler(getattr(self, name), request.FromString, raw)
        methods["Telemetry"] = grpc.stream_stream_rpc_method_handler(
            self.Telemetry, rpc.TelemetryCommand.FromString, rpc.TelemetryCommand.SerializeToString)
        return grpc.method_handlers_generic_handler(SERVICE, methods)

    # --- routing and client lifecycle ------------------------------------------------------

    def _endpoints(self, holder: Holder, requested: pb.Endpoints) -> pb.Endpoints:
        """Where clients reach a broker: for this one, the address they used to get here."""
        if holder.broker == self.cluster.name and requested.addresses:
            return requested
        return endpoints_of(holder.endpoint)

    @staticmethod
    def _queue(topic: str, holder: Holder, queue_id: int, endpoints: pb.Endpoints) -> pb.MessageQueue:
        return pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id, permission=pb.READ_WRITE,
                               broker=pb.Broker(name=holder.broker, id=0, endpoints=endpoints),
                               accept_message_types=holder.wire_types)

    async def _route(self, topic: str, requested: pb.Endpoints, per_broker: bool = False) -> list[pb.MessageQueue]:
        """The topic's queues on every broker, interleaved; `per_broker`: one entry (id -1) each.
        A topic no broker holds is created here if auto-creation is on."""
        holders = await self.cluster.holders(topic)
        if not holders:
            self.ctx.topic_for_route(topic)
            holders = await self.cluster.holders(topic)
        if per_broker:
            return [self._queue(topic, h, -1, self._endpoints(h, requested)) for h in holders]
        return [self._queue(topic, h, q, self._endpoints(h, requested)) for h, q in interleave(holders)]

    def _queue_topic(self, queue: pb.MessageQueue):
        """The local topic of a queue a request names; a queue of another broker is refused
        (queue ids are per broker: serving it here would silently read the wrong queue)."""
        owner = queue.broker.name
        if owner and owner != self.cluster.name:
            raise BrokerError(pb.BAD_REQUEST, f"queue {queue.id} of topic {queue.topic.name!r} belongs to broker {owner!r}; "
                                              f"this is broker {self.cluster.name!r}: send the request to {owner}'s endpoint")
        return self.ctx.meta.topic(queue.topic.name)

    @unary(rpc.QueryRouteResponse)
    async def QueryRoute(self, request, context):
        return rpc.QueryRouteResponse(status=OK, message_queues=await self._route(request.topic.name, request.endpoints))

    @unary(rpc.QueryAssignmentResponse)
    async def QueryAssignment(self, request, context):
        check_name("topic", request.topic.name)
        group = self.ctx.group_for(request.group.name)
        # FIFO: one assignment per queue, long-polled in order; else one per broker, popping
        # across all its queues.
        queues = await self._route(request.topic.name, request.endpoints, per_broker=not group.fifo)
        return rpc.QueryAssignmentResponse(status=OK, assignments=[pb.Assignment(message_queue=q) for q in queues])

    @unary(rpc.HeartbeatResponse)
    async def Heartbeat(self, request, context):
        session = self.clients.register(client_id(context))
        session.client_type = request.client_type or session.client_type
        if request.HasField("group"):
            session.group = request.group.name
        session.lane = header(context, LANE_HEADER)
        return rpc.HeartbeatResponse(status=OK)

    @unary(rpc.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request, context):
        cid = client_id(context)
        self.clients.drop(cid)
        self.pop.renewals.forget(cid)
        return rpc.NotifyClientTerminationResponse(status=OK)

    async def Telemetry(self, requests: AsyncIterator, context) -> AsyncIterator:
        cid = client_id(context)
        if not cid:
            yield rpc.TelemetryCommand(status=status(pb.CLIENT_ID_REQUIRED, "the x-mq-client-id header is required"))
            return
        session = self.clients.register(cid)
        replies: asyncio.Queue = asyncio.Queue(TELEMETRY_BACKLOG)
        session.outbox = replies  # the broker's own commands (transaction checks) go here too

        async def read() -> None:
            try:
                async for command in requests:
                    self.clients.touch(cid)
                    if command.HasField("settings"):
                        try:
                            settings = self.clients.complete_settings(session, command.settings)
                            reply = rpc.TelemetryCommand(status=OK, settings=settings)
                        except BrokerError as e:
                            reply = rpc.TelemetryCommand(status=status(e.code, e.message))
                        await replies.put(reply)
                        if command.settings.HasField("publishing"):  # Node may miss the first reply
                            asyncio.get_running_loop().call_later(1.0, _offer, replies, reply)
            finally:
                await replies.put(None)

        reader = asyncio.create_task(read())
        try:
            while (reply := await replies.get()) is not None:
                yield reply
        finally:
            reader.cancel()
            if session.outbox is replies:
                session.outbox = None

    # --- sending ---------------------------------------------------------------------------

    @unary(rpc.SendMessageResponse)
    async def SendMessage(self, request, context):
        if not request.messages:
            raise BrokerError(pb.BAD_REQUEST, "a SendMessage request needs at least one message")
        results = await self.sender.send(list(request.messages))
        entries = [rpc.SendResultEntry(status=OK if r.code == pb.OK else status(r.code, r.message), message_id=r.message_id,
                                       offset=r.offset, transaction_id=r.transaction_id, recall_handle=r.recall_handle)
                   for r in results]
        return rpc.SendMessageResponse(status=multi_status([e.status for e in entries]), entries=entries)

    @unary(rpc.EndTransactionResponse)
    async def EndTransaction(self, request, context):
        if request.resolution not in (pb.COMMIT, pb.ROLLBACK):
            raise BrokerError(pb.BAD_REQUEST, "resolution must be COMMIT or ROLLBACK")
        await self.transactions.end(request.topic.name, request.message_id, request.transaction_id,
                                          request.resolution == pb.COMMIT)
        return rpc.EndTransactionResponse(status=OK)

    @unary(rpc.RecallMessageResponse)
    async def RecallMessage(self, request, context):
        self.ctx.meta.topic(request.topic.name)
        message_id = await self.timers.recall(request.recall_handle)
        return rpc.RecallMessageResponse(status=OK, message_id=message_id)

    # --- POP consumption -------------------------------------------------------------------

    async def ReceiveMessage(self, request, context) -> AsyncIterator[bytes]:
        R = rpc.ReceiveMessageResponse
        try:
            group = self.ctx.group_for(request.group.name)
            topic = self._queue_topic(request.message_queue)
            sub = self.subscriptions.resolve(group, topic, request.filter_expression)
            renew_for = None
            if request.HasField("invisible_duration"):
                invisible_ms = request.invisible_duration.ToMilliseconds()
            elif request.auto_renew:  # PushConsumers: the broker renews while the client lives
                invisible_ms = self.pop.renewals.invisible_ms
                renew_for = client_id(context)
                self.clients.register(renew_for)
            else:
                raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME, "invisible_duration is required unless auto_renew is set")
            messages = await self.pop.receive(group, topic, sub, request.batch_size or 32, invisible_ms,
                                              self._poll_seconds(request, context), renew_for)
        except BrokerError as e:
            yield _status_frame(R, e.code, e.message)
            yield _now_frame(R)
            return
        except Exception:
            log.exception("ReceiveMessage failed")
            yield _status_frame(R, pb.INTERNAL_ERROR, "internal error; see the broker log")
            yield _now_frame(R)
            return
        if not messages:
            yield _status_frame(R, pb.MESSAGE_NOT_FOUND, "no new message")
            yield _now_frame(R)
            return
        try:
            yield _status_frame(R, pb.OK, "OK")
            for message in messages:
                yield records.frame(MESSAGE_FIELD, message)
            yield _now_frame(R)
        except (GeneratorExit, asyncio.CancelledError):  # the client went away mid-reply
            self.pop.release(group, topic, messages)
            raise

    def _poll_seconds(self, request, context) -> float:
        asked = request.long_polling_timeout.ToMilliseconds() / 1000 if request.HasField("long_polling_timeout") else None
        return poll_seconds(asked, self.ctx.settings.max_long_polling_s, context)

    @unary(rpc.AckMessageResponse)
    async def AckMessage(self, request, context):
        group = self.ctx.meta.group(request.group.name)
        topic = self.ctx.meta.topic(request.topic.name)
        results = self.pop.ack(group, topic, [e.receipt_handle for e in request.entries])
        entries = [rpc.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle,
                                             status=OK if r is None else status(r.code, r.message))
                   for e, r in zip(request.entries, results)]
        return rpc.AckMessageResponse(status=multi_status([e.status for e in entries]), entries=entries)

    async def ChangeInvisibleDuration(self, request, context):
        try:
            group = self.ctx.meta.group(request.group.name)
            topic = self.ctx.meta.topic(request.topic.name)
            handle = self.pop.change_invisible(group, topic, request.receipt_handle,
                                               request.invisible_duration.ToMilliseconds())
            return rpc.ChangeInvisibleDurationResponse(status=OK, receipt_handle=handle)
        except BrokerError as e:  # the old handle comes back: the client overwrites its copy
            return rpc.ChangeInvisibleDurationResponse(status=status(e.code, e.message), receipt_handle=request.receipt_handle)
        except Exception:
            log.exception("ChangeInvisibleDuration failed")
            return rpc.ChangeInvisibleDurationResponse(status=status(pb.INTERNAL_ERROR, "internal error"),
                                                       receipt_handle=request.receipt_handle)

    @unary(rpc.ForwardMessageToDeadLetterQueueResponse)
    async def ForwardMessageToDeadLetterQueue(self, request, context):
        group = self.ctx.meta.group(request.group.name)
        topic = self.ctx.meta.topic(request.topic.name)
        await self.pop.forward_to_dlq(group, topic, request.receipt_handle)
        return rpc.ForwardMessageToDeadLetterQueueResponse(status=OK)

    # --- offset-based consumption ----------------------------------------------------------

    async def PullMessage(self, request, context) -> AsyncIterator[bytes]:
        R = rpc.PullMessageResponse
        try:
            check_name("group", request.group.name)
            topic = self._queue_topic(request.message_queue)
            accept = record_filter(request.filter_expression)
            messages, next_offset = await self.puller.pull(topic, request.message_queue.id, request.offset,
                                                           request.batch_size or 32, accept,
                                                           self._poll_seconds(request, context))
        except BrokerError as e:
            yield _status_frame(R, e.code, e.message)
            return
        except Exception:
            log.exception("PullMessage failed")
            yield _status_frame(R, pb.INTERNAL_ERROR, "internal error; see the broker log")
            return
        yield _status_frame(R, pb.OK if messages else pb.MESSAGE_NOT_FOUND, "OK" if messages else "no new message")
        for message in messages:
            yield records.frame(MESSAGE_FIELD, message)
        yield R(next_offset=next_offset).SerializeToString()

    @unary(rpc.UpdateOffsetResponse)
    async def UpdateOffset(self, request, context):
        group = self.ctx.group_for(request.group.name)
        topic = self._queue_topic(request.message_queue)
        self.puller.update_offset(group, topic, request.message_queue.id, request.offset)
        return rpc.UpdateOffsetResponse(status=OK)

    @unary(rpc.GetOffsetResponse)
    async def GetOffset(self, request, context):
        group = self.ctx.meta.group(request.group.name)
        topic = self._queue_topic(request.message_queue)
        return rpc.GetOffsetResponse(status=OK, offset=self.puller.get_offset(group, topic, request.message_queue.id))

    @unary(rpc.QueryOffsetResponse)
    async def QueryOffset(self, request, context):
        topic = self._queue_topic(request.message_queue)
        ts = request.timestamp.ToMilliseconds() if request.HasField("timestamp") else None
        offset = self.puller.query_offset(topic, request.message_queue.id, request.query_offset_policy, ts)
        return rpc.QueryOffsetResponse(status=OK, offset=offset)

    @unary(rpc.SyncLiteSubscriptionResponse)
    async def SyncLiteSubscription(self, request, context):
        raise BrokerError(pb.UNSUPPORTED, "lite topics are not supported")


def _offer(q: asyncio.Queue, item) -> None:
    if not q.full():
        q.put_nowait(item)
