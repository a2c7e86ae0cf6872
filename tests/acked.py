"""What a group receives of a topic now, each message acknowledged: the consuming side of the
dashboard's tests (a reset makes it receive again, a resent dead letter comes back)."""

from __future__ import annotations

from rockmq.client import Credentials, SimpleConsumer


def acked_bodies(endpoint: str, topic: str, group: str, up_to: int, credentials: Credentials | None = None) -> set[bytes]:
    """The bodies `group` receives of `topic` within ~10 one-second receives, each acknowledged, up to `up_to`."""
    got: set[bytes] = set()
    with SimpleConsumer(endpoint, group, {topic: "*"}, await_s=1, credentials=credentials) as c:
        for _ in range(10):
            for m in c.receive():
                got.add(m.body)
                c.ack(m)
            if len(got) >= up_to:
                break
    return got
