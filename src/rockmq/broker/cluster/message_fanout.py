"""The Messages service's answers across the cluster: a message is on the one broker that stored
it, and which broker that is nobody knows in advance, so in a cluster (and under `--workers`,
whose shards are one) every live broker is asked with `local` set and the answers are merged,
oldest first (broker/message_lookup.py answers for this broker). A broker that does not answer is
named in `unreachable`; one without the topic adds nothing; nothing found anywhere is NOT_FOUND.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import grpc

from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster
from rockmq.broker.message_lookup import MAX_MESSAGES, MessageLookup, check_window
from rockmq.protocol import messages, messages_grpc, pb
from rockmq.protocol.errors import BrokerError, relayed

log = logging.getLogger(__name__)
Reply = TypeVar("Reply", messages.MessagesResponse, messages.TraceMessageResponse)
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class MessageSearch:
    def __init__(self, lookup: MessageLookup, cluster: Cluster) -> None:
        self.lookup = lookup
        self.cluster = cluster

    async def get(self, request: messages.GetMessageRequest) -> messages.MessagesResponse:
        reply = await self._merged("GetMessage", request, lambda: self.lookup.get(request.topic, request.message_id),
                                   MAX_MESSAGES)
        if not reply.messages and not request.local:
            raise _not_found(request.topic, request.message_id, reply.unreachable)
        return reply

    def by_key(self, request: messages.FindMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        _, limit = check_window(request.from_ms, request.to_ms, request.max)
        return self._merged("FindMessages", request, lambda: self.lookup.by_key(request), limit)

    def by_time(self, request: messages.ListMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        _, limit = check_window(request.from_ms, request.to_ms, request.max)
        return self._merged("ListMessages", request, lambda: self.lookup.by_time(request), limit)

    async def trace(self, request: messages.TraceMessageRequest) -> messages.TraceMessageResponse:
        answers, unreachable = await self._everywhere(
            "TraceMessage", request, lambda: self.lookup.trace(request.topic, request.message_id))
        events = sorted((e for a in answers for e in a.events), key=lambda e: (e.at_ms, e.broker))
        if not events and not request.local:
            raise _not_found(request.topic, request.message_id, unreachable)
        return messages.TraceMessageResponse(events=events, unreachable=unreachable)

    async def _merged(self, method: str, request: Any, here: Callable[[], messages.MessagesResponse],
                      limit: int) -> messages.MessagesResponse:
        """Every broker's answer, oldest first, at most `limit` (more: says so)."""
        answers, unreachable = await self._everywhere(method, request, here)
        found = sorted((m for a in answers for m in a.messages),
                       key=lambda m: (m.message.system_properties.store_timestamp.ToMilliseconds(), m.broker))
        return messages.MessagesResponse(messages=found[:limit], unreachable=unreachable,
                                         more=len(found) > limit or any(a.more for a in answers))

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


def _not_found(topic: str, message_id: str, unreachable: Iterable[str]) -> BrokerError:
    missing = f" (brokers that did not answer: {', '.join(unreachable)})" if unreachable else ""
    return BrokerError(pb.NOT_FOUND, f"no message {message_id!r} in topic {topic!r}{missing}")
