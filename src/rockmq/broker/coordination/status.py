"""The primary's report of its group (issue 30 §5; docs/cluster.md "Operating a coordinated group"):
about once a second it writes into the coordinator its last batch and how far each other member is
behind it (messages, ms: the op log's measure), which `rockmq broker group` shows and `rockmq broker
elect --unclean` reads to say what an unclean election loses. The report is kept under no lease, so
after the primary dies it still says how far behind each member was when it last wrote it.

It runs beside the sends, never on their path: a read of the registered members and one
compare-and-set (on the primary key: a member no longer primary writes nothing) a second, skipped
while the coordinator does not answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from rockmq.broker.coordination.coordinator import Coordinator, CoordinatorError, Lag, Status, Unclean

log = logging.getLogger(__name__)
REPORT_S = 1.0
MAX_KNOWN = 64  # members a report lists (a member gone for good stays listed, down, until pushed out)


def status_of(member: str, epoch: int, head: int, known: Mapping[str, int | None],
              lag: Callable[[int, float], tuple[int, float]], now: float) -> Status:
    """The Status at `now` (time.time()) of a primary at batch `head` that knows of the members `known`
    (each with the last batch it applied, if it followed this primary; `lag`: the op log's measure of a
    member that applied a batch: messages, seconds)."""
    return Status(member, epoch, head, int(now * 1000),
                  {m: Lag(at, *_rounded(lag(at, now))) for m, at in known.items() if at is not None and m != member},
                  frozenset(known) - {member})


def _rounded(lag: tuple[int, float]) -> tuple[int, int]:
    return lag[0], round(lag[1] * 1000)


def made_by(choice: Unclean, last: Status | None, member: str, epoch: int) -> bool:
    """Whether the primary `member` at `epoch` is the one the unclean election `choice` made: it names
    this member, an epoch before this one, and no primary reported since (`last`, the last report, is
    from before it: each primary reports within a second, so a later election of this member is not it)."""
    return choice.member == member and choice.after_epoch < epoch and (last is None or last.epoch <= choice.after_epoch)


def unclean_line(group: str, choice: Unclean, epoch: int) -> str:
    """The one log line of an unclean election, said by the member it made primary."""
    lost = (f"it lacked {choice.lag.messages} messages ({choice.lag.ms} ms) of the last primary's log, as that primary "
            f"last reported: lost" if choice.lag is not None else "how much it lacked is not known (no report named it)")
    return (f"group {group}: an unclean election (rockmq broker elect --unclean) made {choice.member} primary at epoch "
            f"{epoch} though the in-sync set was {sorted(choice.replaced)} (none of it live); {lost}")


class StatusReporter:
    """The primary `member` at `epoch`, reporting its group's Status for as long as it serves."""

    def __init__(self, coordinator: Coordinator, group: str, member: str, epoch: int) -> None:
        self.coordinator = coordinator
        self.group = group
        self.member = member
        self.epoch = epoch
        # every member known (registered, following, or in the last primary's report) -> the last batch it
        # applied here (None: it has not followed this primary); at most MAX_KNOWN, the longest unseen first out
        self.known: dict[str, int | None] = {}

    def remember(self, seen: Iterable[str], applied: Mapping[str, int]) -> dict[str, int | None]:
        """`known` with the members `seen` and those following (`applied`) as the latest."""
        for m in (*seen, *applied):
            at = applied.get(m, self.known.get(m))
            self.known.pop(m, None)
            self.known[m] = at
        while len(self.known) > MAX_KNOWN:
            del self.known[next(iter(self.known))]
        return dict(self.known)

    async def run(self, applied: Callable[[], Mapping[str, int]], head: Callable[[], int],
                  lag: Callable[[int, float], tuple[int, float]]) -> None:
        """Say once if this primary was made by an unclean election, take over the members the last
        report knew of; then report every REPORT_S."""
        last = await self._start()
        seen: Iterable[str] = () if last is None else (last.member, *last.known)
        while True:
            try:
                seen = (*seen, *await self.coordinator.members())
                status = status_of(self.member, self.epoch, head(), self.remember(seen, applied()), lag, time.time())
                seen = ()
                await self.coordinator.publish_status(status)
            except CoordinatorError as e:  # unreachable: the next report says it all again
                log.debug("group %s: status not reported: %s", self.group, e)
            await asyncio.sleep(REPORT_S)

    async def _start(self) -> Status | None:
        """The last primary's report (None: none, or the coordinator does not answer), after saying the
        unclean election that made this member primary, if one did."""
        for _ in range(3):  # the coordinator just elected this member: it answers, or this is not worth a wait
            try:
                choice, last = await self.coordinator.unclean(), await self.coordinator.status()
            except CoordinatorError:
                await asyncio.sleep(REPORT_S)
                continue
            if choice is not None and made_by(choice, last, self.member, self.epoch):
                log.warning(unclean_line(self.group, choice, self.epoch))
            return last
        return None
