"""Environment lanes, decided on the broker (docs/client.md "Environment lanes"). Pure, no I/O.

A message's lane is its user property `lane` (none: the base lane). A consumer's lane is the
`x-rockmq-lane` header of its requests (none: a base consumer). All of a group's consumers share
the group's POP state; at receive time each message goes to one of them:

- a consumer takes the messages of its own lane;
- a base consumer also takes the messages of every lane with no live member in the group
  (fallback; liveness is the broker's client tracking, `client_silence_s`);
- any other message is left for the consumers it belongs to (`Route.takes` is False), so it is
  neither lost nor delivered twice: whoever takes it first is the only one.

Official clients cannot add the header: a consumer whose SQL92 filter is exactly `lane = 'dev1'`
(in its Telemetry subscription or its receive) is a member of lane `dev1` (`declared_lane`). That
filter is not registered as the group's subscription (which would filter the base's messages out
of the group's shared state): the lane routing is its filter.

`route()` is None for a base consumer while no lane of its group is alive: the receive path then
makes no lane check at all.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Protocol

from rockmq.protocol import pb
from rockmq.protocol.conventions import LANE_PROPERTY, LANE_RE
from rockmq.protocol.records import RecordView


class Route(NamedTuple):
    lane: str  # the receiving consumer's lane; "" is the base lane
    live: frozenset[str]  # the lanes of the group with a live member

    def takes(self, view: RecordView) -> bool:
        """Whether the receiving consumer may take this message now."""
        lane = message_lane(view)
        return lane == self.lane or (not self.lane and lane not in self.live)


class Consumers(Protocol):
    """How a consumer's receive or pull routes lanes (broker/clients.py; asking keeps a lane consumer live)."""

    def route(self, group: str, client_id: str, lane: str) -> Route | None: ...


def route(lane: str, live: frozenset[str]) -> Route | None:
    """How a receive routes lanes; None when nothing needs deciding (a base consumer, no live lane)."""
    return Route(lane, live) if lane or live else None


def message_lane(view: RecordView) -> str:
    """The lane a stored message was sent in ("" for none)."""
    return pb.Message.FromString(view.rest).user_properties.get(LANE_PROPERTY, "")  # type: ignore[arg-type]  # any buffer parses


EVERYTHING = pb.FilterExpression(type=pb.TAG, expression="*")
_DECLARED = re.compile(rf"\s*{LANE_PROPERTY}\s*=\s*'({LANE_RE.pattern.strip('^$')})'\s*")


def declared_lane(expression: pb.FilterExpression) -> str:
    """The lane an SQL92 filter of exactly `lane = '<lane>'` joins ("" for any other filter)."""
    if expression.type != pb.SQL:
        return ""
    found = _DECLARED.fullmatch(expression.expression)
    return found.group(1) if found else ""

