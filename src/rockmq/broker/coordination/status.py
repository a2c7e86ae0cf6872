"""The primary's report of its group (issue 30 §5; docs/cluster.md "Operating a coordinated group"):
about once a second it writes into the coordinator its last batch and how far each other member is
behind it (messages, ms: the op log's measure), which `rockmq broker group` shows and `rockmq broker
elect --unclean` reads to say what an unclean election loses. The report is kept under no lease, so
after the primary dies it still says how far behind each member was when it last wrote it.

It runs beside the sends, never on their path: one compare-and-set a second (on the primary key: a
member no longer primary writes nothing), skipped while the coordinator does not answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from rockmq.broker.coordination.coordinator import Coordinator, CoordinatorError, Lag, Status, Unclean

log = logging.getLogger(__name__)
REPORT_S = 1.0
MAX_REMEMBERED = 64  # members no longer following whose last applied batch is kept (their lag still grows)


def status_of(member: str, epoch: int, head: int, applied: Mapping[str, int],
              lag: Callable[[int], tuple[int, float]], now_ms: int) -> Status:
    """The Status of a primary at batch `head` whose members applied `applied` (`lag`: the op log's
    measure of a member that applied a batch: messages, seconds)."""
    return Status(member, epoch, head, now_ms,
                  {m: Lag(at, *_rounded(lag(at))) for m, at in applied.items() if m != member})


def _rounded(lag: tuple[int, float]) -> tuple[int, int]:
    return lag[0], round(lag[1] * 1000)


def unclean_line(group: str, choice: Unclean, epoch: int) -> str:
    """The one log line of an unclean election, said by the member it made primary."""
    lost = (f"it lacked {choice.lag.messages} messages ({choice.lag.ms} ms) of the last primary's log, as that primary "
            f"last reported: lost" if choice.lag is not None else "how much it lacked is not known (no report named it)")
    return (f"group {group}: unclean election (rockmq broker elect --unclean): {choice.member} is primary at epoch "
            f"{epoch} though the in-sync set was {sorted(choice.replaced)} (none of it live); {lost}")


class StatusReporter:
    """The primary `member` at `epoch`, reporting its group's Status for as long as it serves."""

    def __init__(self, coordinator: Coordinator, group: str, member: str, epoch: int) -> None:
        self.coordinator = coordinator
        self.group = group
        self.member = member
        self.epoch = epoch
        self.remembered: dict[str, int] = {}  # each member seen following -> the last batch it applied

    def remember(self, applied: Mapping[str, int]) -> dict[str, int]:
        """Those following now, and those seen before (their last batch): at most MAX_REMEMBERED of the
        latter, the longest gone first out."""
        for m, at in applied.items():
            self.remembered.pop(m, None)
            self.remembered[m] = at
        while len(self.remembered) > MAX_REMEMBERED:
            del self.remembered[next(iter(self.remembered))]
        return dict(self.remembered)

    async def run(self, applied: Callable[[], Mapping[str, int]], head: Callable[[], int],
                  lag: Callable[[int, float], tuple[int, float]]) -> None:
        """Say once if this primary was made by an unclean election; then report every REPORT_S."""
        await self._say_if_unclean()
        while True:
            now = time.time()
            status = status_of(self.member, self.epoch, head(), self.remember(applied()),
                               lambda at: lag(at, now), int(now * 1000))
            try:
                await self.coordinator.publish_status(status)
            except CoordinatorError as e:  # unreachable: the next report says it all again
                log.debug("group %s: status not reported: %s", self.group, e)
            await asyncio.sleep(REPORT_S)

    async def _say_if_unclean(self) -> None:
        for _ in range(3):  # the coordinator just elected this member: it answers, or the line is not worth a wait
            try:
                choice = await self.coordinator.unclean()
            except CoordinatorError:
                await asyncio.sleep(REPORT_S)
                continue
            if choice is not None and choice.member == self.member and choice.after_epoch + 1 == self.epoch:
                log.warning(unclean_line(self.group, choice, self.epoch))
            return
