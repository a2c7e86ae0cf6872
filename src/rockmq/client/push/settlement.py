"""What becomes of a pulled message once its handler has run (clustering, broadcast): consumed, or
failed and then retried in place, handed back to the broker (the group's retry topic, and the
broker's dead-letter queue once the attempts are used up) or given up, by mode. Commits are in
commits.py; POP acks in pop.py."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Sequence

from rockmq.client.errors import RockmqError, from_status
from rockmq.client.message import ReceivedMessage
from rockmq.client.push.handler import HandlerRunner
from rockmq.client.push.owned import PAUSE_S, OwnedQueue
from rockmq.client.push.retries import backoff_s, send_back_copy
from rockmq.client.session import Session
from rockmq.protocol import admin, pb, rpc
from rockmq.protocol.conventions import DEFAULT_MAX_ATTEMPTS
from rockmq.protocol.message_id import new_message_id

log = logging.getLogger(__name__)


class Settlement:
    """Runs a message's handler until the message is done with, and settles each failure.

    - clustering, not orderly: a failed message goes to the retry topic at once, delayed by its
      step of `retry_backoff_s`, so it never blocks the queue's commit;
    - orderly: retried in place after its backoff (the queue waits), then, its attempts used up,
      handed back with no delay: the broker makes it a dead letter;
    - broadcast: retried in place, then logged and skipped (no member shares a retry topic)."""

    def __init__(self, runner: HandlerRunner, session: Session, *, group: str, state_group: str, mode: str,
                 orderly: bool, retry_backoff_s: Sequence[float], max_attempts: int | None) -> None:
        self._runner = runner
        self._session = session
        self._group, self._state_group = group, state_group
        self._sends_back_at_once = mode == "clustering" and not orderly
        self._skips_at_last = mode == "broadcast"
        self._retries_in_place = orderly or mode == "broadcast"
        self._ladder = tuple(retry_backoff_s)
        self.max_attempts = max_attempts
        self._host = socket.gethostname()

    def backoff_s(self, failures: int) -> float:
        """The wait after a message's `failures`-th failure (its step of `retry_backoff_s`)."""
        return backoff_s(self._ladder, failures)

    async def resolve_max_attempts(self) -> int | None:
        """What limits retries in place when the application gave no `max_attempts`: the group's
        setting on the broker (its default when that cannot be read)."""
        if self.max_attempts is None and self._retries_in_place:
            self.max_attempts = await self._group_max_attempts()
        return self.max_attempts

    async def _group_max_attempts(self) -> int:
        try:
            info = await self._session.admin(self._session.access_point, "DescribeGroup",
                                             admin.GroupRequest(name=self._state_group, local=True))
            return info.max_attempts or DEFAULT_MAX_ATTEMPTS
        except RockmqError:
            return DEFAULT_MAX_ATTEMPTS

    async def settle(self, owned: OwnedQueue, message: ReceivedMessage) -> bool:
        """Run the handler until the message is consumed, handed back or given up -> True; False if
        the queue was taken away first (the message stays uncommitted for the next owner)."""
        while not owned.stopped:
            if await self._runner.run(message):
                return True
            failures = message.delivery_attempt
            if self._sends_back_at_once:
                if await self.send_back(message, failures, self.backoff_s(failures)):
                    return True
            elif failures >= (self.max_attempts or DEFAULT_MAX_ATTEMPTS):
                return await self._give_up(owned, message, failures)
            await asyncio.sleep(self.backoff_s(failures))
            message = message.replace(delivery_attempt=failures + 1)
        return False

    async def _give_up(self, owned: OwnedQueue, message: ReceivedMessage, failures: int) -> bool:
        """A message retried in place has used up its attempts: broadcast skips it; orderly makes it a
        dead letter (the broker decides), trying until the broker takes it or the queue is let go."""
        if self._skips_at_last:
            log.error("group %s: message %s failed %d times; broadcast consumers skip it", self._group,
                      message.message_id, failures)
            return True
        while not owned.released():
            if await self.send_back(message, failures, 0):
                return True
            await asyncio.sleep(PAUSE_S)
        return False

    async def send_back(self, message: ReceivedMessage, failures: int, delay_s: float) -> bool:
        """Give a failed message to the broker for redelivery (or its dead-letter queue); False if
        the broker could not take it (then it is retried here)."""
        copy = send_back_copy(message, self._state_group, failures, int(delay_s * 1000))
        request = rpc.SendMessageRequest(messages=[copy.to_pb(new_message_id(), self._host, int(time.time() * 1000))])
        try:
            reply = await self._session.unary(message.endpoint, "SendMessage", request)
            entry = reply.entries[0]
            if entry.status.code != pb.OK:
                raise from_status(entry.status.code, entry.status.message)
            return True
        except RockmqError as e:
            log.warning("group %s: cannot hand message %s back to %s: %s", self._group, message.message_id,
                        message.broker, e)
            return False
