"""Environment lanes of offset-based consumers (docs/client.md "Environment lanes"). Pure, no I/O.

A producer in lane `dev1` marks its messages with the property `lane=dev1`. In POP groups the
broker routes lanes itself (broker/lanes.py). An offset-based consumer in lane `dev1` of group `G`
keeps its offsets under the group `G%LANE%dev1` and reads only `lane = 'dev1'` messages; a
base-lane consumer (no lane) reads messages without a lane and, with fallback on, those of every
lane that has no live consumer in the group (members announce their lane in their heartbeats).
With no lane alive the base consumer's filter is exactly the user's: lanes cost nothing to those
who do not use them.

Fallback is decided when a message is read: a lane message the base consumer skipped while its
lane was alive stays with that lane, whose consumer reads it when it comes back.
"""

from __future__ import annotations

from collections.abc import Iterable

from rockmq.client.consumer import Filter
from rockmq.protocol.conventions import LANE_PROPERTY

LANE_GROUP_SEPARATOR = "%LANE%"


def lane_group(group: str, lane: str | None) -> str:
    """The group under which a lane's consumers keep their offsets and in-flight state."""
    return group if lane is None else f"{group}{LANE_GROUP_SEPARATOR}{lane}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tags_as_sql(expression: str) -> str | None:
    """A tag expression (`a||b`, `*`) as an SQL92 condition on TAGS; None for every tag."""
    tags = [t.strip() for t in expression.split("||") if t.strip()]
    if not tags or "*" in tags:
        return None
    return f"TAGS IN ({', '.join(_quote(t) for t in tags)})"


def lane_filter(user: Filter, lane: str | None, live_lanes: Iterable[str] = (), fallback: bool = True) -> Filter:
    """The broker-side filter of a consumer: the user's condition and its lane's."""
    if lane is not None:
        clause = f"{LANE_PROPERTY} = {_quote(lane)}"
    else:
        others = sorted(set(live_lanes)) if fallback else None
        if others == []:
            return user
        clause = f"{LANE_PROPERTY} IS NULL"
        if others:
            clause = f"({clause} OR {LANE_PROPERTY} NOT IN ({', '.join(_quote(x) for x in others)}))"
    condition = user.expression if user.sql else tags_as_sql(user.expression)
    return Filter.sql92(clause if condition is None else f"({condition}) AND {clause}")
