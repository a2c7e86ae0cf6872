"""rockmq's Messages service: find a stored message by id, key or store time, and trace it.

Answered here (broker/message_lookup.py) and, in a cluster or under `--workers` (whose shards are
one), by every live broker asked with `local` set, merged oldest first: a message is on the one
broker that stored it, and which broker that is nobody knows in advance. A broker that does not
answer is named in `unreachable`; one without the topic adds nothing. Nothing found anywhere is
NOT_FOUND, in one line.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import grpc

from rockmq.broker.api.replies import admin_call
from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster
from rockmq.broker.message_lookup import MAX_MESSAGES, MessageLookup, check_window
from rockmq.protocol import messages, messages_grpc, pb
from rockmq.protocol.errors import BrokerError, relayed

log = logging.getLogger(__name__)
Reply = TypeVar("Reply", messages.MessagesResponse, messages.TraceMessageResponse)
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class MessagesServicer(messages_grpc.MessagesServicer):
    def __init__(self, lookup: MessageLookup, cluster: Cluster) -> None:
        self.lookup = lookup
        self.cluster = cluster

    async def _everywhere(self, method: str, request: Any, here: Callable[[], Reply]) -> tuple[list[Reply], list[str]]:
        """`here()` alone for a `local` request or without name servers; else the answer of every
        live broker -> (answers, brokers that did not answer). No broker with the topic: its NOT_FOUND."""
        if request.local or not self.cluster.enabled:
            return [here()], []
        local = type(request)()
        local.CopyFrom(request)
        local.local = True
        answers: list[Reply] = []
        unreachable: list[str] = []
        missing: BrokerError | None = None
        for broker, endpoint in sorted((await self.cluster.live()).items()):
            try:
                if broker == self.cluster.name:
                    answers.append(here())
                else:
                    stub = self.cluster.service(endpoint, messages_grpc.MessagesStub)
                    call: Callable[..., Awaitable[Reply]] = getattr(stub, method)
                    answers.append(await call(local, timeout=RPC_TIMEOUT_S))
            except BrokerError as e:
                if not e.not_found:
                    raise
                missing = e
            except grpc.aio.AioRpcError as e:
                if e.code() in _UNREACHABLE:
                    log.warning("%s: broker %s did not answer: %s", method, broker, e.details())
                    unreachable.append(broker)
                elif e.code() == grpc.StatusCode.NOT_FOUND:
                    missing = missing or BrokerError(pb.TOPIC_NOT_FOUND, e.details() or "not found")
                else:
                    raise relayed(e, f"on broker {broker}: {e.details()}") from None
        if not answers and missing is not None and not unreachable:
            raise missing
        return answers, unreachable

    async def _merged(self, method: str, request: Any, here: Callable[[], messages.MessagesResponse],
                      limit: int) -> messages.MessagesResponse:
        answers, unreachable = await self._everywhere(method, request, here)
        found = sorted((m for a in answers for m in a.messages),
                       key=lambda m: (m.message.system_properties.store_timestamp.ToMilliseconds(), m.broker))
        reply = messages.MessagesResponse(messages=found[:limit], unreachable=unreachable,
                                          more=len(found) > limit or any(a.more for a in answers))
        return reply

    @admin_call
    async def GetMessage(self, request: messages.GetMessageRequest) -> messages.MessagesResponse:
        reply = await self._merged("GetMessage", request, lambda: self.lookup.get(request.topic, request.message_id),
                                   MAX_MESSAGES)
        if not reply.messages and not request.local:
            raise _not_found(request.topic, request.message_id, reply.unreachable)
        return reply

    @admin_call
    def FindMessages(self, request: messages.FindMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        _, limit = check_window(request.from_ms, request.to_ms, request.max)
        return self._merged("FindMessages", request, lambda: self.lookup.find(request), limit)

    @admin_call
    def ListMessages(self, request: messages.ListMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        _, limit = check_window(request.from_ms, request.to_ms, request.max)
        return self._merged("ListMessages", request, lambda: self.lookup.list(request), limit)

    @admin_call
    async def TraceMessage(self, request: messages.TraceMessageRequest) -> messages.TraceMessageResponse:
        answers, unreachable = await self._everywhere(
            "TraceMessage", request, lambda: self.lookup.trace(request.topic, request.message_id))
        events = sorted((e for a in answers for e in a.events), key=lambda e: (e.at_ms, e.broker))
        if not events and not request.local:
            raise _not_found(request.topic, request.message_id, unreachable)
        return messages.TraceMessageResponse(events=events, unreachable=unreachable)


def _not_found(topic: str, message_id: str, unreachable: Iterable[str]) -> BrokerError:
    missing = f" (brokers that did not answer: {', '.join(unreachable)})" if unreachable else ""
    return BrokerError(pb.NOT_FOUND, f"no message {message_id!r} in topic {topic!r}{missing}")
