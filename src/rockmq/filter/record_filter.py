"""A consumer's filter applied to stored records: a TAG expression or an SQL92 expression.

Tag filters read the tag from the record header and parse nothing; SQL filters also need the
user properties, parsed from the record only when the expression is evaluated.
"""

from __future__ import annotations

from collections.abc import Callable

from rockmq.filter.sql import compile_sql
from rockmq.filter.tags import IllegalExpression, compile_tags, match_all
from rockmq.protocol import pb
from rockmq.protocol.records import RecordView

RecordFilter = Callable[[RecordView], bool]

__all__ = ["IllegalExpression", "RecordFilter", "accept_all", "compile_filter"]


def accept_all(view: RecordView) -> bool:
    return True


def compile_filter(expression: str, sql: bool = False) -> RecordFilter:
    """Compile once per subscription; raises IllegalExpression for a bad expression."""
    if not sql:
        tags = compile_tags(expression)
        if tags is match_all:
            return accept_all
        return lambda view: tags(view.tag)
    matches = compile_sql(expression).matches

    def accept(view: RecordView) -> bool:
        message = pb.Message.FromString(view.rest)  # type: ignore[arg-type]  # any buffer parses: no copy
        return matches(message.user_properties, view.tag)

    return accept
