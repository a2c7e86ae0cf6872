"""Lite topics in a cluster and under `--workers` (docs/lite-topics.md "Several brokers").

Each lite topic lives on one broker of its LITE topic: `conventions.lite_owner`, a stable hash of
its name over the names of the brokers holding the parent. A client may send a lite message to any
of them (the official producers pick any queue), so a broker passes a message it does not own to
its owner, as Apache's proxy does, and answers with the owner's result. A lite subscription reaches
one broker (the client's access point); that broker makes it known to the parent's other brokers,
so each serves the client the lite topics it owns (the push consumer's assignment names one queue
on each broker). A forwarded call (`FORWARDED_HEADER`) is acted on where it arrives, never passed on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import grpc

from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster
from rockmq.broker.send import SendResult
from rockmq.protocol import pb, rpc, svc
from rockmq.protocol.conventions import FORWARDED_HEADER, lite_owner
from rockmq.protocol.send_request import SentMessage

log = logging.getLogger(__name__)

FORWARDED = ((FORWARDED_HEADER, "1"),)


class LiteRouting:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @property
    def enabled(self) -> bool:
        return self.cluster.enabled

    async def _owners(self, topic: str) -> dict[str, str]:
        """broker name -> endpoint of the brokers holding a topic for writes."""
        return {h.broker: h.endpoint for h in await self.cluster.holders(topic)}

    async def elsewhere(self, messages: Sequence[SentMessage]) -> dict[str, list[int]]:
        """The lite messages of a request another broker owns: its endpoint -> their indexes."""
        out: dict[str, list[int]] = {}
        held: dict[str, dict[str, str]] = {}
        for i, msg in enumerate(messages):
            if msg.lite_topic is None:
                continue
            owners = held.get(msg.topic)
            if owners is None:
                owners = held[msg.topic] = await self._owners(msg.topic)
            if len(owners) < 2:
                continue
            owner = lite_owner(msg.lite_topic, list(owners))
            if owner != self.cluster.name:
                out.setdefault(owners[owner], []).append(i)
        return out

    async def forward(self, endpoint: str, messages: list[SentMessage]) -> list[SendResult]:
        """Send lite messages to their owner -> its results (one per message); an owner out of reach
        answers each with a retriable status (the client sends again, and finds it or its successor)."""
        request = rpc.SendMessageRequest(messages=[m.message() for m in messages])
        try:
            reply = await self.cluster.service(endpoint, svc.MessagingServiceStub).SendMessage(
                request, metadata=FORWARDED, timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            log.warning("cannot pass lite messages to their broker at %s: %s", endpoint, e.details())
            return [SendResult(pb.PROXY_TIMEOUT, f"the broker holding lite topic {m.lite_topic!r} did not answer "
                                                 "(retry)", m.message_id) for m in messages]
        if reply.status.code != pb.OK and not reply.entries:
            return [SendResult(reply.status.code, reply.status.message, m.message_id) for m in messages]
        return [SendResult(e.status.code, e.status.message, e.message_id, e.offset, e.transaction_id, e.recall_handle)
                for e in reply.entries]

    async def subscribed(self, topic: str, request: rpc.SyncLiteSubscriptionRequest, client_id: str,
                         client: tuple[tuple[str, str], ...]) -> None:
        """Make a lite subscription known to the parent's other brokers (`client`: the client's
        id, language and version headers, as it sent them); one out of reach logs it, and learns the
        set with the client's next COMPLETE_ADD (every 30 s)."""
        if not self.cluster.enabled:
            return
        others = [e for b, e in (await self._owners(topic)).items() if b != self.cluster.name]

        async def tell(endpoint: str) -> None:
            try:
                await self.cluster.service(endpoint, svc.MessagingServiceStub).SyncLiteSubscription(
                    request, metadata=(*FORWARDED, *client), timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError as e:
                log.warning("cannot pass client %s's lite subscription to %s: %s", client_id, endpoint, e.details())

        await asyncio.gather(*(tell(e) for e in others))
