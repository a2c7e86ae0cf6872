"""Transactional messages: a half message the producer commits or rolls back, and the checker
that settles the transactions whose sender never ended them (it crashed, or lost the reply).

The broker asks about an undecided transaction on the Telemetry stream of a producer that
publishes its topic. So a producer with a checker keeps one `TelemetrySession` per broker it
sends transactional messages to: the stream announces the topics (settings, client type
PRODUCER), answers each `recover_orphaned_transaction_command` with the checker's verdict
(EndTransaction, source SERVER_CHECK), is re-opened with backoff when it breaks or reaches its
deadline, and a Heartbeat goes every HEARTBEAT_S. A verdict of UNKNOWN, a checker that raises or
takes longer than CHECK_TIMEOUT_S: no answer, and the broker asks again later (after its last
check it rolls the transaction back).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from rockmq.client.limits import HEARTBEAT_S
from rockmq.client.message import ReceivedMessage, SendReceipt
from rockmq.client.session import Session
from rockmq.protocol import pb, rpc
from rockmq.protocol.endpoints import endpoints_of

log = logging.getLogger(__name__)

STREAM_S = 300.0  # a stream's deadline: it is re-opened then, so no call waits forever
MIN_BACKOFF_S, MAX_BACKOFF_S = 0.2, 10.0
CHECK_TIMEOUT_S = 30.0
MAX_CHECKS_IN_FLIGHT = 64  # beyond it a check is dropped; the broker asks again


class TransactionResolution(enum.Enum):
    COMMIT = pb.COMMIT
    ROLLBACK = pb.ROLLBACK
    UNKNOWN = pb.TRANSACTION_RESOLUTION_UNSPECIFIED  # not decided yet: ask again later


Checker = Callable[[ReceivedMessage], TransactionResolution | Awaitable[TransactionResolution]]


async def end_transaction(session: Session, endpoint: str, topic: str, message_id: str, transaction_id: str,
                          resolution: TransactionResolution, source: pb.TransactionSource) -> None:
    request = rpc.EndTransactionRequest(topic=pb.Resource(name=topic), message_id=message_id,
                                        transaction_id=transaction_id, resolution=resolution.value, source=source)
    await session.unary(endpoint, "EndTransaction", request)


class AsyncTransaction:
    """A sent half message: consumers see it after `commit()`; `rollback()` drops it. Ending it
    again the same way is harmless; the other way raises."""

    def __init__(self, session: Session, endpoint: str, receipt: SendReceipt) -> None:
        self._session = session
        self._endpoint = endpoint  # the broker holding the half message
        self.receipt = receipt

    @property
    def message_id(self) -> str:
        return self.receipt.message_id

    @property
    def transaction_id(self) -> str:
        return self.receipt.transaction_id

    async def commit(self) -> None:
        await self._end(TransactionResolution.COMMIT)

    async def rollback(self) -> None:
        await self._end(TransactionResolution.ROLLBACK)

    async def _end(self, resolution: TransactionResolution) -> None:
        r = self.receipt
        await end_transaction(self._session, self._endpoint, r.topic, r.message_id, r.transaction_id, resolution,
                              pb.SOURCE_CLIENT)


class TelemetrySession:
    """A producer's Telemetry stream to one broker, kept open until `close()`."""

    def __init__(self, session: Session, endpoint: str, broker: str, checker: Checker) -> None:
        self.session = session
        self.endpoint = endpoint
        self.broker = broker
        self.checker = checker
        self.topics: set[str] = set()
        self._outbox: asyncio.Queue[rpc.TelemetryCommand | None] | None = None
        self._checks: set[asyncio.Task[None]] = set()
        self._tasks = [asyncio.create_task(self._keep_open(), name=f"rockmq-telemetry-{endpoint}"),
                       asyncio.create_task(self._heartbeats(), name=f"rockmq-heartbeat-{endpoint}")]

    def publish(self, topic: str) -> None:
        """Announce one more topic whose transactions this producer settles."""
        if topic in self.topics:
            return
        self.topics.add(topic)
        if self._outbox is not None:
            self._outbox.put_nowait(self._settings())

    def _settings(self) -> rpc.TelemetryCommand:
        settings = pb.Settings(client_type=pb.PRODUCER, access_point=endpoints_of(self.session.access_point),
                               publishing=pb.Publishing(topics=[pb.Resource(name=t) for t in sorted(self.topics)]),
                               user_agent=pb.UA(language=pb.PYTHON, version="rockmq", hostname=socket.gethostname()))
        settings.request_timeout.FromMilliseconds(int(self.session.request_timeout_s * 1000))
        return rpc.TelemetryCommand(settings=settings)

    async def _keep_open(self) -> None:
        backoff = MIN_BACKOFF_S
        while True:
            opened = time.monotonic()
            try:
                await self._stream()
            except Exception as e:  # the broker went away, or the deadline came: open it again
                log.debug("telemetry stream to %s ended: %s", self.endpoint, e)
            if time.monotonic() - opened > MAX_BACKOFF_S:
                backoff = MIN_BACKOFF_S
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _stream(self) -> None:
        outbox: asyncio.Queue[rpc.TelemetryCommand | None] = asyncio.Queue()
        outbox.put_nowait(self._settings())

        async def requests() -> AsyncIterator[rpc.TelemetryCommand]:
            while (command := await outbox.get()) is not None:
                yield command

        frames = self.session.stream(self.endpoint, "Telemetry", requests(), STREAM_S)
        self._outbox = outbox
        try:
            async for command in frames:
                if command.HasField("recover_orphaned_transaction_command"):
                    self._start_check(command.recover_orphaned_transaction_command)
                elif command.HasField("status") and command.status.code != pb.OK:
                    log.warning("telemetry from %s: %s", self.endpoint, command.status.message)
        finally:
            self._outbox = None
            outbox.put_nowait(None)
            await frames.aclose()

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self.session.unary(self.endpoint, "Heartbeat", rpc.HeartbeatRequest(client_type=pb.PRODUCER))
            except Exception as e:
                log.debug("heartbeat to %s failed: %s", self.endpoint, e)
            await asyncio.sleep(HEARTBEAT_S)

    def _start_check(self, recover: rpc.RecoverOrphanedTransactionCommand) -> None:
        if len(self._checks) >= MAX_CHECKS_IN_FLIGHT:
            log.warning("too many transaction checks in flight; %s is asked again later", recover.transaction_id)
            return
        task = asyncio.create_task(self._check(recover))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _check(self, recover: rpc.RecoverOrphanedTransactionCommand) -> None:
        message = ReceivedMessage.from_pb(recover.message, self.broker, self.endpoint)
        try:
            verdict = self.checker(message)
            if inspect.isawaitable(verdict):
                verdict = await asyncio.wait_for(verdict, CHECK_TIMEOUT_S)
            verdict = TransactionResolution(verdict)
        except Exception:
            log.exception("the transaction checker failed on message %s; the broker asks again", message.message_id)
            return
        if verdict is TransactionResolution.UNKNOWN:
            return
        try:
            await end_transaction(self.session, self.endpoint, message.topic, message.message_id,
                                  recover.transaction_id, verdict, pb.SOURCE_SERVER_CHECK)
        except Exception as e:
            log.warning("could not settle transaction %s (%s): %s", recover.transaction_id, verdict.name, e)

    async def close(self) -> None:
        tasks = [*self._tasks, *self._checks]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
