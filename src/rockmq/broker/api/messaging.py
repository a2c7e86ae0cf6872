"""The `apache.rocketmq.v2.MessagingService` servicer: translate requests, delegate, reply.

No messaging logic lives here. Every refusal is a reply with `status{code, message}` and gRPC
OK, as the official clients expect; an unexpected exception becomes INTERNAL_ERROR and is
logged, and the broker keeps serving. The streaming RPCs yield pre-encoded frames (messages
straight from the store), so their handlers are registered with a pass-through serializer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator

import grpc

from rockmq.auth.access import AccessControl
from rockmq.auth.seam import current_identity
from rockmq.broker.api.replies import (
    OK,
    entry_results,
    entry_statuses,
    found_status,
    message_queues,
    now_frame,
    send_reply,
    serialized,
    status,
    status_frame,
    status_of,
    unary,
)
from rockmq.broker.clients import Clients, Session, identify
from rockmq.broker.cluster.lite_relay import MARK as RELAY_MARK
from rockmq.broker.cluster.lite_relay import LiteRelay, Received, unwrap
from rockmq.broker.cluster.lite_routing import LiteRouting
from rockmq.broker.cluster.routes import Cluster
from rockmq.broker.context import BrokerContext
from rockmq.broker.lite.subscriptions import LiteSubscriptions, quota_exceeded
from rockmq.broker.metadata import GroupConfig, TopicConfig, is_lite
from rockmq.broker.pop.service import Deferred, PopService
from rockmq.broker.pull import PullService
from rockmq.broker.send import SendService
from rockmq.broker.stalled_streams import StalledStreams
from rockmq.broker.subscriptions import record_filter
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.plumbing.channels import CLIENT_ID_HEADER, LANGUAGE_HEADER, VERSION_HEADER
from rockmq.plumbing.requests import Context, client_id, header, poll_seconds, timestamp_ms
from rockmq.plumbing.tls import is_tls
from rockmq.plumbing.unparsed import generic_handler
from rockmq.protocol import pb, rpc
from rockmq.protocol.ack_request import AckRequest
from rockmq.protocol.ack_request import read as read_ack
from rockmq.protocol.consume_replies import ack_message_reply
from rockmq.protocol.conventions import (
    CLIENT_CHOOSES,
    FORWARDED_HEADER,
    LANE_HEADER,
    LITE_WATCH_HEADER,
    MESSAGING_SERVICE,
    QUEUE_CHOICE_HEADER,
)
from rockmq.protocol.errors import BrokerError
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.protocol.send_request import SentMessage, read
from rockmq.protocol.wire import delimited

log = logging.getLogger(__name__)
_OK_FRAME = status_frame(rpc.ReceiveMessageResponse, OK)  # a receive that found messages starts with it
TELEMETRY_BACKLOG = 64  # commands waiting for a slow client; beyond it pushes are dropped (checks repeat)


UNARY_METHODS = {
    name: (getattr(rpc, f"{name}Request"), getattr(rpc, f"{name}Response"))
    for name in ("QueryRoute", "Heartbeat", "SendMessage", "QueryAssignment", "ForwardMessageToDeadLetterQueue",
                 "UpdateOffset", "GetOffset", "QueryOffset", "EndTransaction", "NotifyClientTermination",
                 "ChangeInvisibleDuration", "RecallMessage", "SyncLiteSubscription")
}


class MessagingServicer:
    def __init__(self, ctx: BrokerContext, send: SendService, pop: PopService, pull: PullService,
                 timers: TimerService, transactions: TransactionService, clients: Clients,
                 cluster: Cluster, streams: StalledStreams, lite: LiteSubscriptions, lite_routing: LiteRouting,
                 lite_relay: LiteRelay, access: AccessControl | None = None) -> None:
        self.ctx = ctx
        self.lite = lite
        self.lite_routing = lite_routing
        self.lite_relay = lite_relay
        self.streams = streams
        self.access = access  # auth on: what the handlers check themselves (auth/access.py)
        self.cluster = cluster
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
        methods["AckMessage"] = grpc.unary_unary_rpc_method_handler(  # read by us (ack_request); encoded already, or a refusal
            self.AckMessage, read_ack, serialized)
        methods["SendMessage"] = grpc.unary_unary_rpc_method_handler(self.SendMessage, read, serialized)  # read by us
        for name, request in (("ReceiveMessage", rpc.ReceiveMessageRequest), ("PullMessage", rpc.PullMessageRequest)):
            methods[name] = grpc.unary_stream_rpc_method_handler(getattr(self, name), request.FromString, raw)
        methods["Telemetry"] = grpc.stream_stream_rpc_method_handler(
            self.Telemetry, rpc.TelemetryCommand.FromString, rpc.TelemetryCommand.SerializeToString)
        return generic_handler(MESSAGING_SERVICE, methods)

    # --- routing and client lifecycle ------------------------------------------------------

    def _queue_topic(self, queue: pb.MessageQueue) -> TopicConfig:
        return self.cluster.local_topic(queue.topic.name, queue.id, queue.broker.name)

    @unary(rpc.QueryRouteResponse)
    async def QueryRoute(self, request: rpc.QueryRouteRequest, context: Context) -> rpc.QueryRouteResponse:
        queues = await self.cluster.route(request.topic.name)
        return rpc.QueryRouteResponse(status=OK, message_queues=message_queues(
            request.topic.name, queues, self.cluster.here, request.endpoints, is_tls(context)))

    @unary(rpc.QueryAssignmentResponse)
    async def QueryAssignment(self, request: rpc.QueryAssignmentRequest, context: Context) -> rpc.QueryAssignmentResponse:
        queues = await self.cluster.assignment(request.topic.name, request.group.name)
        return rpc.QueryAssignmentResponse(status=OK, assignments=[
            pb.Assignment(message_queue=q)
            for q in message_queues(request.topic.name, queues, self.cluster.here, request.endpoints, is_tls(context))])

    @unary(rpc.HeartbeatResponse)
    async def Heartbeat(self, request: rpc.HeartbeatRequest, context: Context) -> rpc.HeartbeatResponse:
        session = self.clients.heartbeat(client_id(context), request.client_type,
                                         request.group.name if request.HasField("group") else None,
                                         header(context, LANE_HEADER))
        identify(session, context.peer(), header(context, LANGUAGE_HEADER), header(context, VERSION_HEADER))
        return rpc.HeartbeatResponse(status=OK)

    @unary(rpc.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request: rpc.NotifyClientTerminationRequest,
                                      context: Context) -> rpc.NotifyClientTerminationResponse:
        self.clients.terminated(client_id(context))
        return rpc.NotifyClientTerminationResponse(status=OK)

    async def Telemetry(self, requests: AsyncIterator[rpc.TelemetryCommand],
                        context: Context) -> AsyncIterator[rpc.TelemetryCommand]:
        cid = client_id(context)
        if not cid:
            yield rpc.TelemetryCommand(status=status(pb.CLIENT_ID_REQUIRED, f"the {CLIENT_ID_HEADER} header is required"))
            return
        try:
            self.clients.own(cid, "Telemetry")
        except BrokerError as e:
            yield rpc.TelemetryCommand(status=status_of(e))
            return
        replies: asyncio.Queue[rpc.TelemetryCommand | None] = asyncio.Queue(TELEMETRY_BACKLOG)
        session: Session | None = None  # made by the first settings command that passes

        async def read() -> None:
            nonlocal session
            try:
                async for command in requests:
                    self.clients.touch(cid)
                    try:  # a command whose bytes do not parse (UNPARSED, rockmq/plumbing/unparsed.py) is refused here too
                        if not command.HasField("settings"):
                            continue
                        session = self._settle(cid, command.settings, replies, context)
                        settings = self.clients.complete_settings(session, command.settings)
                        reply = rpc.TelemetryCommand(status=OK, settings=settings)
                    except BrokerError as e:
                        reply = rpc.TelemetryCommand(status=status_of(e))
                    await replies.put(reply)
            finally:
                await replies.put(None)

        reader = asyncio.create_task(read())
        writes = self.streams.open(context, "Telemetry")
        try:
            while (reply := await replies.get()) is not None:
                writes.busy = True
                yield reply
                writes.busy = False
                writes.count += 1
        finally:
            self.streams.close(writes)
            reader.cancel()
            if session is not None and session.outbox is replies:
                session.outbox = None

    def _settle(self, cid: str, settings: pb.Settings, replies: asyncio.Queue[rpc.TelemetryCommand | None],
                context: Context) -> Session:
        """The session a settings command is for: with authentication on, only settings that use a
        grant make one (auth/access.py); its stream then carries the broker's own commands too
        (transaction checks)."""
        if self.access is not None:
            self.access.check_settings(settings)
        session = self.clients.register(cid, "Telemetry")
        session.outbox = replies
        identify(session, context.peer(), header(context, LANGUAGE_HEADER), header(context, VERSION_HEADER))
        return session

    # --- sending ---------------------------------------------------------------------------

    @unary(rpc.SendMessageResponse)
    async def SendMessage(self, messages: list[SentMessage], context: Context) -> bytes:
        """Read from the request's bytes by its deserializer (`send_request.read`: no protobuf object
        per message), answered encoded (`send_reply`)."""
        if self.access is not None:
            self.access.check_sends(m.topic for m in messages)
        return send_reply(await self.sender.send(messages, header(context, QUEUE_CHOICE_HEADER) == CLIENT_CHOOSES,
                                                 self._forwarded(context)))

    def _forwarded(self, context: Context) -> bool:
        """A call another broker of the cluster made on a client's behalf (broker/cluster/lite_routing.py):
        with authentication on, only under the cluster's inner credentials."""
        if header(context, FORWARDED_HEADER) != "1":
            return False
        who = current_identity()
        return self.access is None or (who is not None and who.inner)

    def _relayed(self, handle: str, context: Context) -> bool:
        """A receipt handle another broker issued, wrapped by the relay (broker/cluster/lite_relay.py),
        in a client's own call: only its first character is looked at unless it is one."""
        return handle[:1] == RELAY_MARK and self.cluster.enabled and not self._forwarded(context)

    @unary(rpc.EndTransactionResponse)
    async def EndTransaction(self, request: rpc.EndTransactionRequest, context: Context) -> rpc.EndTransactionResponse:
        await self.transactions.end(request.topic.name, request.message_id, request.transaction_id, request.resolution)
        return rpc.EndTransactionResponse(status=OK)

    @unary(rpc.RecallMessageResponse)
    async def RecallMessage(self, request: rpc.RecallMessageRequest, context: Context) -> rpc.RecallMessageResponse:
        message_id = await self.timers.recall(request.topic.name, request.recall_handle)
        return rpc.RecallMessageResponse(status=OK, message_id=message_id)

    # --- POP consumption -------------------------------------------------------------------

    async def ReceiveMessage(self, request: rpc.ReceiveMessageRequest, context: Context) -> AsyncIterator[bytes]:
        """A status frame, one frame per message and the delivery timestamp, as Apache's proxy
        answers: the official clients need all three (docs/protocol.md). Messages past the streams'
        `allowance` are framed as their turn comes: clients that do not read pin no more, until their
        streams are cancelled (broker/stalled_streams.py)."""
        R = rpc.ReceiveMessageResponse
        messages: list[bytes | Deferred] = []
        allowance = held = 0
        try:
            allowance = self.streams.allowance()
            group = self.ctx.group_for(request.group.name)
            topic = self._queue_topic(request.message_queue)
            invisible_ms = request.invisible_duration.ToMilliseconds() if request.HasField("invisible_duration") else None
            poll_s = self._poll_seconds(request, context)
            if is_lite(topic) and self.cluster.enabled:  # what a plain receive pays for the relay: this test
                messages = await self._receive_lite(request, context, group, topic, invisible_ms, poll_s, allowance)
            else:
                messages = await self.pop.receive_deferring(
                    group, topic, request.filter_expression, request.batch_size, invisible_ms, poll_s,
                    client_id(context), header(context, LANE_HEADER), request.auto_renew, allowance)
            first = _OK_FRAME if messages else status_frame(R, found_status(False))
            # what it holds framed: all (one pass, in C), or, with some deferred, its allowance and one message
            held = sum(map(len, messages)) if not messages or isinstance(messages[-1], bytes) else allowance
        except Exception as e:
            first = status_frame(R, status_of(e, "ReceiveMessage"))
        self.streams.held += held
        writes = self.streams.open(context, "ReceiveMessage")
        writes.busy = True
        try:
            yield first
            for message in messages:  # framed by the receive already, or deferred to now
                frame = message if isinstance(message, bytes) else self.pop.frame(topic, message)
                if frame is not None:
                    yield frame
                    writes.count += 1
            yield now_frame(R)
        except (GeneratorExit, asyncio.CancelledError):  # the client went away mid-reply, or read nothing
            if messages and isinstance(messages[0], bytes):  # the first one is always framed
                self.pop.release(group, topic, messages[0])
            raise
        finally:
            self.streams.held -= held
            self.streams.close(writes)

    async def _receive_lite(self, request: rpc.ReceiveMessageRequest, context: Context, group: GroupConfig,
                            topic: TopicConfig, invisible_ms: int | None, poll_s: float, allowance: int) -> Received:
        """A lite receive in a cluster: a LiteSimpleConsumer's also from the other brokers owning its lite
        topics (broker/cluster/lite_relay.py); any other, and a forwarded one, here only."""
        cid, lane = client_id(context), header(context, LANE_HEADER)

        async def receive(poll_s: float, batch_size: int) -> Received:
            return await self.pop.receive_deferring(group, topic, request.filter_expression, batch_size, invisible_ms,
                                                    poll_s, cid, lane, request.auto_renew, allowance)

        if self._forwarded(context):  # another broker's relay: serve it here (or only watch), pass it on to none
            if header(context, LITE_WATCH_HEADER) == "1":
                await self.pop.watch_lite(group, topic, cid, poll_s)
                return []
            return await receive(poll_s, request.batch_size)
        session = self.clients.sessions.get(cid)
        if session is None or session.client_type != pb.LITE_SIMPLE_CONSUMER:
            return await receive(poll_s, request.batch_size)
        owners = await self.lite_relay.owners(topic.name, self.lite.reader(cid, group, topic).names)
        if not owners or not self.lite_relay.admit(cid):
            return await receive(poll_s, request.batch_size)
        s = self.ctx.settings
        batch = min(request.batch_size or s.receive_batch, s.max_receive_batch)
        try:
            return await self.lite_relay.receive(receive, owners, request, _said(context), batch, poll_s)
        finally:
            self.lite_relay.done(cid)

    def _poll_seconds(self, request: rpc.ReceiveMessageRequest | rpc.PullMessageRequest, context: Context) -> float:
        asked = request.long_polling_timeout.ToMilliseconds() / 1000 if request.HasField("long_polling_timeout") else None
        return poll_seconds(asked, self.ctx.settings.max_long_polling_s, context)

    @unary(rpc.AckMessageResponse)
    async def AckMessage(self, request: AckRequest, context: Context) -> bytes:
        """Read from its bytes by its deserializer and answered encoded (protocol/ack_request.py): no
        protobuf object per entry."""
        group = self.ctx.meta.group(request.group)
        topic = self.ctx.meta.topic(request.topic)
        top, statuses = entry_results(self.pop.ack(group, topic, request.handles))
        if top is not OK and self.cluster.enabled and not self._forwarded(context):  # some refused: an owner's?
            if await self.lite_relay.ack(request.group, request.topic, request.handles, request.entries, statuses):
                top, statuses = entry_statuses(statuses)
        return ack_message_reply(top, request.entries, statuses)

    async def ChangeInvisibleDuration(self, request: rpc.ChangeInvisibleDurationRequest,
                                      context: Context) -> rpc.ChangeInvisibleDurationResponse:
        try:
            owner = unwrap(request.receipt_handle) if self._relayed(request.receipt_handle, context) else None
            if owner is not None:
                return await self.lite_relay.change_invisible(request, *owner)
            group = self.ctx.meta.group(request.group.name)
            topic = self.ctx.meta.topic(request.topic.name)
            handle = self.pop.change_invisible(group, topic, request.receipt_handle,
                                               request.invisible_duration.ToMilliseconds())
            return rpc.ChangeInvisibleDurationResponse(status=OK, receipt_handle=handle)
        except Exception as e:  # the old handle comes back: the client overwrites its copy
            return rpc.ChangeInvisibleDurationResponse(status=status_of(e, "ChangeInvisibleDuration"),
                                                       receipt_handle=request.receipt_handle)

    @unary(rpc.ForwardMessageToDeadLetterQueueResponse)
    async def ForwardMessageToDeadLetterQueue(self, request: rpc.ForwardMessageToDeadLetterQueueRequest,
                                              context: Context) -> rpc.ForwardMessageToDeadLetterQueueResponse:
        owner = unwrap(request.receipt_handle) if self._relayed(request.receipt_handle, context) else None
        if owner is not None:
            return await self.lite_relay.dead_letter(request, *owner)
        group = self.ctx.meta.group(request.group.name)
        topic = self.ctx.meta.topic(request.topic.name)
        await self.pop.forward_to_dlq(group, topic, request.receipt_handle)
        return rpc.ForwardMessageToDeadLetterQueueResponse(status=OK)

    # --- offset-based consumption ----------------------------------------------------------

    async def PullMessage(self, request: rpc.PullMessageRequest, context: Context) -> AsyncIterator[bytes]:
        """At most `stream_buffer_bytes` of messages (at least one): the client pulls the rest from
        next_offset, and one that does not read pins no more (broker/stalled_streams.py)."""
        R = rpc.PullMessageResponse
        try:
            topic = self._queue_topic(request.message_queue)
            accept = record_filter(request.filter_expression)
            messages, next_offset = await self.puller.pull(request.group.name, topic, request.message_queue.id,
                                                           request.offset, request.batch_size, accept,
                                                           self._poll_seconds(request, context),
                                                           self.ctx.settings.stream_buffer_bytes,
                                                           client_id(context), header(context, LANE_HEADER))
            frames = _pulled(messages, next_offset)
        except Exception as e:
            frames = iter((status_frame(R, status_of(e, "PullMessage")),))
        writes = self.streams.open(context, "PullMessage")
        writes.busy = True
        try:
            for frame in frames:
                yield frame
                writes.count += 1
        finally:
            self.streams.close(writes)

    @unary(rpc.UpdateOffsetResponse)
    async def UpdateOffset(self, request: rpc.UpdateOffsetRequest, context: Context) -> rpc.UpdateOffsetResponse:
        group = self.ctx.group_for(request.group.name)
        topic = self._queue_topic(request.message_queue)
        self.puller.update_offset(group, topic, request.message_queue.id, request.offset)
        return rpc.UpdateOffsetResponse(status=OK)

    @unary(rpc.GetOffsetResponse)
    async def GetOffset(self, request: rpc.GetOffsetRequest, context: Context) -> rpc.GetOffsetResponse:
        topic = self._queue_topic(request.message_queue)
        offset = self.puller.get_offset(request.group.name, topic, request.message_queue.id)
        return rpc.GetOffsetResponse(status=OK, offset=offset)

    @unary(rpc.QueryOffsetResponse)
    async def QueryOffset(self, request: rpc.QueryOffsetRequest, context: Context) -> rpc.QueryOffsetResponse:
        topic = self._queue_topic(request.message_queue)
        ts = timestamp_ms(request.timestamp) if request.HasField("timestamp") else None
        offset = self.puller.query_offset(topic, request.message_queue.id, request.query_offset_policy, ts)
        return rpc.QueryOffsetResponse(status=OK, offset=offset)

    @unary(rpc.SyncLiteSubscriptionResponse)
    async def SyncLiteSubscription(self, request: rpc.SyncLiteSubscriptionRequest,
                                   context: Context) -> rpc.SyncLiteSubscriptionResponse:
        """A lite consumer's subscriptions (broker/lite/subscriptions.py): held per client id."""
        cid = client_id(context)
        if not cid:
            raise BrokerError(pb.CLIENT_ID_REQUIRED, f"the {CLIENT_ID_HEADER} header is required")
        forwarded = self._forwarded(context)
        if not forwarded:  # the client's own call (a forwarded one is the inner user's: it makes no session)
            self.clients.register(cid, "SyncLiteSubscription")
        group = self.ctx.group_for(request.group.name)
        topic = self.ctx.meta.topic(request.topic.name)
        if not is_lite(topic):
            raise BrokerError(pb.BAD_REQUEST, f"topic {topic.name!r} is not a LITE topic: it has no lite topics")
        said = _said(context)
        names = list(request.lite_topic_set)
        dropped = self.lite.sync(cid, group, topic, request.action, names, f"{said[1][1].upper()} {said[2][1]}")
        if not forwarded:
            await self.lite_routing.subscribed(topic.name, request, cid, said)
        for name in dropped:
            self.clients.unsubscribed_lite(cid, name)
        if dropped:
            raise quota_exceeded(cid, topic, len(names), self.lite.quota)
        return rpc.SyncLiteSubscriptionResponse(status=OK)


def _said(context: Context) -> tuple[tuple[str, str], ...]:
    """The client's id, language and version headers as it sent them: what a call made on its behalf carries."""
    return tuple((h, header(context, h)) for h in (CLIENT_ID_HEADER, LANGUAGE_HEADER, VERSION_HEADER))


def _pulled(messages: list[bytes], next_offset: int) -> Iterator[bytes]:
    """A pull's reply frames, made as they are written: its status, each message, next_offset."""
    R = rpc.PullMessageResponse
    yield status_frame(R, found_status(bool(messages)))
    for message in messages:
        yield delimited(ReceivedMessageFields.MESSAGE, message)
    yield R(next_offset=next_offset).SerializeToString()
