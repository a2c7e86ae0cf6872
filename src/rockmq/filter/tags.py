"""RocketMQ tag expressions: `*` (or empty) matches everything, `a||b` matches tags a and b.

An untagged message matches only `*`. Pure logic, compiled once per subscription.

The size limits of every filter expression (tag or SQL92) live here, the module both kinds
share: an expression is a client's string that the broker parses, caches, stores in its meta and
logs, so its size is checked before any of that (`check_size`), in time linear in what the
client sent and with nothing kept.
"""

from __future__ import annotations

from collections.abc import Callable

TagFilter = Callable[[str | None], bool]

MAX_LENGTH = 4096  # characters of one expression, tag or SQL92
MAX_TAGS = 256  # tags of one tag expression: each becomes a bucket of the match index (filter/index.py)
_SEPARATOR = "||"


class IllegalExpression(ValueError):
    """The expression cannot be parsed."""


def match_all(tag: str | None) -> bool:
    return True


def check_size(expression: str, tags: bool) -> None:
    """Refuse an expression longer than MAX_LENGTH, or a tag expression of more than MAX_TAGS
    tags, naming neither the expression nor any part of it (the message may be logged)."""
    if len(expression) > MAX_LENGTH:
        raise IllegalExpression(f"expression is {len(expression)} characters long; the limit is {MAX_LENGTH}")
    if tags and expression.count(_SEPARATOR) >= MAX_TAGS:
        raise IllegalExpression(f"tag expression has {expression.count(_SEPARATOR) + 1} tags; the limit is {MAX_TAGS}")


def parse_tags(expression: str) -> frozenset[str] | None:
    """The tags of a tag expression; None for `*` or empty (everything)."""
    check_size(expression, tags=True)
    expr = expression.strip()
    if expr in ("", "*"):
        return None
    tags = frozenset(t.strip() for t in expr.split(_SEPARATOR))
    if "" in tags:
        raise IllegalExpression(f"empty tag in tag expression {expression!r}")
    return None if "*" in tags else tags


def compile_tags(expression: str) -> TagFilter:
    tags = parse_tags(expression)
    return match_all if tags is None else tags.__contains__
