"""The dashboard's "send a test message" (rockmq/ui/send.py) done as `rockmq message send` does it: one send
through rockmq's client, routed like any client's, signed as the viewer, so the broker's Pub ACL decides
and the message is checked, stored and traced as any other. Here, not in the ui, because the ui sits beside
the client in the layers (tests/unit/test_layers.py); the broker and the `--workers` supervisor hand it in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from rockmq.client import AsyncProducer, Message, at_random
from rockmq.client.errors import RockmqError
from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.ui.send import Outgoing, Refused, Send, Sent, http_status

TIMEOUT_S = 10.0  # each request (the CLI's REQUEST_TIMEOUT_S); no retries: the viewer sees it at once


def message(m: Outgoing) -> Message:
    return Message(m.topic, m.body, tag=m.tag or None, keys=m.keys, message_group=m.message_group or None,
                   deliver_at=datetime.fromtimestamp(m.deliver_at_ms / 1000, UTC) if m.deliver_at_ms else None,
                   lite_topic=m.lite_topic or None, priority=m.priority)


def sender(endpoint: Callable[[], str], tls: Tls | None) -> Send:
    """The Send of a broker (or shard) reached at `endpoint()` (its own, as its clients reach it)."""

    async def send(m: Outgoing, user: Credentials | None) -> Sent:
        try:
            async with AsyncProducer(endpoint(), request_timeout=TIMEOUT_S, delivery_timeout=0, selector=at_random,
                                     tls=tls, credentials=user) as producer:
                receipt = await producer.send(message(m))
        except RockmqError as e:
            raise Refused(http_status(e.code) if e.code else 502, e.message) from None
        return Sent(receipt.message_id, receipt.broker, receipt.queue_id, receipt.offset)

    return send
