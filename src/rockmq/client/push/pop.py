"""A push consumer in POP mode: no rebalance and no offsets. Receive loops take `batch_size`
messages each while `concurrency` handlers run; a batch's successes are acked in one request once
its last handler is done, its failures come back after their backoff (ChangeInvisibleDuration),
and while a batch is held, renewal rounds keep what waits from coming back as a duplicate (held.py).
A lite topic's messages (`subscribe_lite`) are handled one after another, in order."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from rockmq.client.consumer import AsyncSimpleConsumer
from rockmq.client.errors import RockmqError
from rockmq.client.message import ReceivedMessage
from rockmq.client.push.handler import HandlerRunner
from rockmq.client.push.held import Held
from rockmq.client.push.owned import PAUSE_S
from rockmq.client.push.retries import backoff_s

log = logging.getLogger(__name__)

RENEW_AT = 0.5  # a batch still held settles and renews when this share of the invisible time has passed


class PopLoops:
    """The receive loops over one simple consumer (at least two: receives in flight while handlers run)."""

    def __init__(self, simple: AsyncSimpleConsumer, runner: HandlerRunner, *, group: str, concurrency: int,
                 batch_size: int, invisible_s: float, retry_backoff_s: Sequence[float]) -> None:
        self._simple = simple
        self._runner = runner
        self._group = group
        self._count = max(2, -(-concurrency // batch_size))
        self._batch_size, self._invisible_s = batch_size, invisible_s
        self._ladder = tuple(retry_backoff_s)
        self._loops: list[asyncio.Task[None]] = []
        self._receiving: set[asyncio.Task[Any]] = set()  # loops waiting in a receive (nothing to finish)
        self._shut = False

    def start(self) -> None:
        """The receive loops (made on start: they need the running event loop)."""
        self._loops = [asyncio.create_task(self._loop(), name="rockmq-pop") for _ in range(self._count)]

    def shut(self) -> None:
        """No more receives: each loop ends once its batch is settled."""
        self._shut = True

    async def close(self, timeout_s: float) -> None:
        """Stop receiving at once; a loop holding a batch gets `timeout_s` to settle it (what is left
        comes back after its invisible time); then close the simple consumer."""
        if self._loops:
            for task in self._receiving:
                task.cancel()
            await asyncio.wait(self._loops, timeout=timeout_s)
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        await self._simple.close()

    async def _loop(self) -> None:
        """Receive a batch, run its handlers (within the `concurrency` slots), ack the successes in
        one request, send the failures back after their backoff; several of these run at once."""
        me = asyncio.current_task()
        assert me is not None
        while not self._shut:
            self._receiving.add(me)
            try:
                received = await self._simple.receive(self._batch_size, self._invisible_s)
            except RockmqError as e:
                log.warning("group %s: receive failed: %s", self._group, e)
                await asyncio.sleep(PAUSE_S)
                continue
            finally:
                self._receiving.discard(me)
            if received:
                await self._consume_held(Held(received))

    async def _consume_held(self, held: Held) -> None:
        """Run a received batch's handlers, with renewal rounds while it is held, then settle it."""
        held.timer = asyncio.get_running_loop().call_later(self._invisible_s * RENEW_AT, self._start_round, held)
        try:
            await self._run_handlers(held)
        except asyncio.CancelledError:  # closing: what is unsettled comes back after its invisible time
            held.stop()
            if held.round is not None:
                held.round.cancel()
            raise
        held.stop()
        if held.round is not None:  # a round in flight renews handles: ack with the new ones
            await held.round
        await self._settle(held)

    async def _run_handlers(self, held: Held) -> None:
        """Every handler of the batch within the `concurrency` slots; a lite topic's messages one
        after another, in the order received (the broker hands a lite topic out in order)."""
        if held.messages[0].lite_topic is None:  # one receive, one topic: a plain topic's batch has no lite topic
            await asyncio.gather(*(self._runner.run(m, held, i) for i, m in enumerate(held.messages)))
            return
        chains: dict[str | None, list[int]] = {}
        for i, m in enumerate(held.messages):
            chains.setdefault(m.lite_topic, []).append(i)
        await asyncio.gather(*(self._run_in_order(held, chain) for chain in chains.values()))

    async def _run_in_order(self, held: Held, chain: list[int]) -> None:
        """One lite topic's messages in order; after a failure the rest are not run but failed with
        it, so they come back after it, in order."""
        for at, i in enumerate(chain):
            if not await self._runner.run(held.messages[i], held, i):
                for j in chain[at + 1:]:
                    held.verdicts[j] = False
                return

    def _start_round(self, held: Held) -> None:
        held.round = asyncio.create_task(self._round(held), name="rockmq-pop-renew")

    async def _round(self, held: Held) -> None:
        """Half an invisible time into holding a batch (and every half one after): renew what has not
        finished, ack what had, and come again unless the batch is done. Renewal first: a message
        that finishes meanwhile was renewed already (acked with the new handle at the next round)."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        await self._renew(held)
        await self._settle(held)
        if not held.done:
            held.timer = loop.call_at(began + self._invisible_s * RENEW_AT, self._start_round, held)

    async def _renew(self, held: Held) -> None:
        """Extend the invisible time of the held messages not finished (each its own request: only
        messages that waited half an invisible time pay for it)."""
        renew = held.to_renew(time.monotonic(), self._invisible_s)
        replies = await asyncio.gather(*(self._simple.change_invisible_duration(held.messages[i], self._invisible_s)
                                         for i in renew), return_exceptions=True)
        for i, reply in zip(renew, replies, strict=True):
            if isinstance(reply, ReceivedMessage):
                held.messages[i] = reply
            elif isinstance(reply, RockmqError):  # too late, or the broker is gone: it comes again
                log.warning("group %s: cannot renew the invisible time of %s: %s", self._group,
                            held.messages[i].message_id, reply)
            else:
                raise reply

    async def _settle(self, held: Held) -> None:
        """Ack the finished successes in one request; send the failures back after their backoff."""
        done, failed = held.take_finished()
        if not done and not failed:
            return
        try:
            refused = await self._simple.ack_many(done)
            await asyncio.gather(*(self._simple.change_invisible_duration(m, backoff_s(self._ladder, m.delivery_attempt))
                                   for m in failed))
        except RockmqError as e:  # they come back when their invisible time ends
            log.warning("group %s: settling %d messages failed: %s", self._group, len(done) + len(failed), e)
            return
        for m, error in refused:
            log.warning("group %s: ack of %s refused (%s): it outlived its invisible time and comes again",
                        self._group, m.message_id, error)
