"""RocketMQ tag expressions: `*` (or empty) matches everything, `a||b` matches tags a and b.

An untagged message matches only `*`. Pure logic, compiled once per subscription.
"""

from __future__ import annotations

from collections.abc import Callable

TagFilter = Callable[[str | None], bool]


class IllegalExpression(ValueError):
    """The expression cannot be parsed."""


def match_all(tag: str | None) -> bool:
    return True


def parse_tags(expression: str) -> frozenset[str] | None:
    """The tags of a tag expression; None for `*` or empty (everything)."""
    expr = expression.strip()
    if expr in ("", "*"):
        return None
    tags = frozenset(t.strip() for t in expr.split("||"))
    if "" in tags:
        raise IllegalExpression(f"empty tag in tag expression {expression!r}")
    return None if "*" in tags else tags


def compile_tags(expression: str) -> TagFilter:
    tags = parse_tags(expression)
    return match_all if tags is None else tags.__contains__
