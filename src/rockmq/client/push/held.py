"""A POP receive held by a push consumer (`pop.py`): its messages, when each one's handler began and
its verdict, and which are settled. No I/O: the handler runner notes starts and verdicts here, and
the POP loop's renewal rounds read them, so the bookkeeping is tested without a broker."""

from __future__ import annotations

import asyncio

from rockmq.client.message import ReceivedMessage


class Held:
    """One POP receive, from the receive until each of its messages is acked or sent back.

    The broker hides a message for the invisible time from the receive on, but here it may wait
    for a free handler (a receive brings `batch_size`, two loops receive, and `concurrency` handlers
    run) and, finished, for the rest of its batch (one ack request for the batch: the fast path).
    So while a batch is held, a round every `invisible_s * RENEW_AT` (`PopLoops._round`) acks what
    finished and renews the rest: what waits for a handler, and what runs, for its first
    `invisible_s` in the handler (one stuck longer loses its message to the group, as before). A
    batch that finishes before the first round (fast handlers) costs a timer and nothing else."""

    __slots__ = ("done", "messages", "round", "settled", "started", "timer", "verdicts")

    def __init__(self, messages: list[ReceivedMessage]) -> None:
        n = len(messages)
        self.messages = messages  # with their latest receipt handles
        self.started = [0.0] * n  # when its handler began (monotonic); 0.0 while it waits for one
        self.verdicts: list[bool | None] = [None] * n  # its handler's verdict, once finished
        self.settled = [False] * n  # acked or sent back by a round
        self.timer: asyncio.TimerHandle | None = None  # the next round
        self.round: asyncio.Task[None] | None = None  # the last round started
        self.done = False  # every handler finished: no more rounds

    def take_finished(self) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """The finished messages not yet settled, (successes, failures), now counted as settled."""
        ok: list[ReceivedMessage] = []
        failed: list[ReceivedMessage] = []
        for i, verdict in enumerate(self.verdicts):
            if verdict is not None and not self.settled[i]:
                self.settled[i] = True
                (ok if verdict else failed).append(self.messages[i])
        return ok, failed

    def to_renew(self, now: float, longest_run_s: float) -> list[int]:
        """The unfinished messages whose invisible time to extend: waiting, or in a handler for
        less than `longest_run_s`."""
        return [i for i, started in enumerate(self.started)
                if self.verdicts[i] is None and (not started or now - started < longest_run_s)]

    def stop(self) -> None:
        """No more rounds (a round already running finishes: await `round`)."""
        self.done = True
        if self.timer is not None:
            self.timer.cancel()

