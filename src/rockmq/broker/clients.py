"""Connected clients: their Telemetry settings, liveness, and the settings the broker completes.

A client announces itself on the Telemetry stream with its settings; the broker answers with
the completed settings (limits, backoff policy, subscription defaults).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rockmq.broker.context import BrokerContext
from rockmq.protocol import pb

MAX_CLIENTS = 100_000
# RocketMQ's customised retry ladder for concurrent push consumers (seconds).
RETRY_LADDER_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
FIFO_RETRY_S = 3


@dataclass
class Session:
    client_id: str
    client_type: int = pb.CLIENT_TYPE_UNSPECIFIED
    group: str = ""
    topics: tuple[str, ...] = ()
    last_seen: float = field(default_factory=time.monotonic)


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class Clients:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.sessions: dict[str, Session] = {}

    def touch(self, client_id: str) -> Session | None:
        s = self.sessions.get(client_id)
        if s is not None:
            s.last_seen = time.monotonic()
        return s

    def last_seen(self, client_id: str) -> float | None:
        s = self.sessions.get(client_id)
        return s.last_seen if s is not None else None

    def register(self, client_id: str) -> Session:
        s = self.sessions.get(client_id)
        if s is None:
            if len(self.sessions) >= MAX_CLIENTS:
                self._drop_oldest()
            s = self.sessions[client_id] = Session(client_id)
        s.last_seen = time.monotonic()
        return s

    def _drop_oldest(self) -> None:
        oldest = min(self.sessions.values(), key=lambda s: s.last_seen)
        del self.sessions[oldest.client_id]

    def drop(self, client_id: str) -> None:
        self.sessions.pop(client_id, None)

    def complete_settings(self, session: Session, given: pb.Settings) -> pb.Settings:
        """The client's settings with the broker's part filled in (see the protocol notes)."""
        out = pb.Settings()
        out.CopyFrom(given)
        out.metric.on = False
        session.client_type = given.client_type
        if given.HasField("publishing"):
            session.topics = tuple(t.name for t in given.publishing.topics)
            out.publishing.max_body_size = self.ctx.settings.max_body_size
            out.publishing.validate_message_type = True
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = 3
            policy.exponential_backoff.initial.FromMilliseconds(_ms(0.01))
            policy.exponential_backoff.max.FromMilliseconds(_ms(1))
            policy.exponential_backoff.multiplier = 2.0
        elif given.HasField("subscription"):
            sub = out.subscription
            session.group = given.subscription.group.name
            session.topics = tuple(e.topic.name for e in given.subscription.subscriptions)
            group = self.ctx.group_for(session.group) if session.group else None
            fifo = bool(group and group.fifo)
            sub.fifo = fifo
            sub.receive_batch_size = 32
            if not sub.HasField("long_polling_timeout") or sub.long_polling_timeout.ToMilliseconds() <= 0:
                sub.long_polling_timeout.FromMilliseconds(_ms(20))
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = group.max_attempts if group else self.ctx.settings.max_attempts
            ladder = (FIFO_RETRY_S,) if fifo else RETRY_LADDER_S
            for s in ladder:
                policy.customized_backoff.next.add().FromMilliseconds(_ms(s))
        return out
