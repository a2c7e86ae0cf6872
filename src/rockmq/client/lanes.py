"""Environment lanes, the client's part (docs/client.md "Environment lanes"). Pure, no I/O.

A producer in lane `dev1` marks its messages with the property `lane=dev1`; consumers state their
lane on every request and the broker routes (broker/lanes.py). What is left here is the filter an
offset-based consumer sends: a lane consumer's adds `lane = 'dev1'`, a base consumer's is the
user's (with `lane_fallback=False`: no lane's messages at all).
"""

from __future__ import annotations

from rockmq.client.consumer import Filter
from rockmq.protocol.conventions import LANE_PROPERTY


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def tags_as_sql(expression: str) -> str | None:
    """A tag expression (`a||b`, `*`) as an SQL92 condition on TAGS; None for every tag."""
    tags = [t.strip() for t in expression.split("||") if t.strip()]
    if not tags or "*" in tags:
        return None
    return f"TAGS IN ({', '.join(_quote(t) for t in tags)})"


def lane_filter(user: Filter, lane: str | None, fallback: bool = True) -> Filter:
    """The filter an offset-based consumer sends: the user's condition and, in a lane, its lane's
    (the broker also routes: it keeps live lanes' messages from base consumers), or for a base
    consumer without fallback, no lane's at all."""
    if lane is not None:
        clause = f"{LANE_PROPERTY} = {_quote(lane)}"
    elif fallback:
        return user
    else:
        clause = f"{LANE_PROPERTY} IS NULL"
    condition = user.expression if user.sql else tags_as_sql(user.expression)
    return Filter.sql92(clause if condition is None else f"({condition}) AND {clause}")
