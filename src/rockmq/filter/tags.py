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


def compile_tags(expression: str) -> TagFilter:
    expr = expression.strip()
    if expr in ("", "*"):
        return match_all
    tags = frozenset(t.strip() for t in expr.split("||"))
    if "" in tags:
        raise IllegalExpression(f"empty tag in tag expression {expression!r}")
    if "*" in tags:
        return match_all
    return tags.__contains__
