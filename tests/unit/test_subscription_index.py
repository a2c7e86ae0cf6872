"""SubscriptionIndex must give exactly what evaluating every subscription gives (naive_match).

Property-based with `random` and fixed seeds: random expressions over a small vocabulary, so that
values collide often, mixed with tag subscriptions, against random messages.
"""

import random
from collections import Counter

import pytest

from rockmq.filter import sql
from rockmq.filter.index import SubscriptionIndex, matcher, naive_match
from rockmq.filter.sql import IllegalExpression, compile_sql
from rockmq.filter.tags import compile_tags, parse_tags

FIELDS = ["MessageType", "TAGS", "a", "b", "n"]
STRINGS = ["x", "y", "z", "1", "05", "5", "", "it's", "true"]
NUMBERS = ["1", "5", "-3", "5.0", "2.5", "3000000000", "5L"]
VALUES = STRINGS + ["-3", "5.0", "abc", "TRUE", "NaN", "3000000000", " 5", "2.5", "+5"]
TAGS = ["x", "y", "z", "t"]


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def atom(rng: random.Random, field: str | None = None) -> str:
    f = field or rng.choice(FIELDS)
    s, num = quote(rng.choice(STRINGS)), rng.choice(NUMBERS)
    choices = [
        f"{f} = {s}", f"{s} = {f}", f"{f} <> {s}",
        f"{f} IN ({', '.join(quote(v) for v in rng.sample(STRINGS, rng.randint(1, 3)))})",
        f"{f} NOT IN ({', '.join(quote(v) for v in rng.sample(STRINGS, rng.randint(1, 3)))})",
        f"{f} = {num}", f"{f} {rng.choice(['>', '>=', '<', '<='])} {num}", f"{num} < {f}",
        f"{f} {rng.choice(['BETWEEN', 'NOT BETWEEN'])} {rng.choice(['-3 AND 5', '1 AND 2.5', '2.5 AND 5.0'])}",
        f"{f} IS NULL", f"{f} IS NOT NULL",
        f"{f} {rng.choice(['', 'NOT '])}{rng.choice(['CONTAINS', 'STARTSWITH', 'ENDSWITH'])} {s}",
        f"{f} = {rng.choice(['TRUE', 'FALSE'])}",
        f"{f} = {rng.choice(FIELDS)}", f"{f} > {rng.choice(FIELDS)}",
        rng.choice(["TRUE", "FALSE", "NULL", f]),
    ]
    return rng.choice(choices)


def expression(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth >= 3 or r < 0.35:
        return atom(rng)
    if r < 0.55:
        return f"{expression(rng, depth + 1)} AND {expression(rng, depth + 1)}"
    if r < 0.75:
        return f"{expression(rng, depth + 1)} OR {expression(rng, depth + 1)}"
    if r < 0.9:
        return f"NOT ({expression(rng, depth + 1)})"
    return f"({expression(rng, depth + 1)})"


def subscription(rng: random.Random) -> str:
    """Half of them shaped to be indexable on MessageType or TAGS, as real subscriptions are."""
    r = rng.random()
    if r < 0.25:
        return f"{atom(rng, rng.choice(['MessageType', 'TAGS']))} AND ({expression(rng, 1)})"
    if r < 0.4:
        return f"{expression(rng, 2)} AND MessageType IN ('x', 'y')"
    if r < 0.5:
        return " OR ".join(f"(MessageType = {quote(rng.choice(STRINGS))} AND {expression(rng, 2)})" for _ in range(2))
    if r < 0.6:  # a side that may throw before one that binding the field decides
        inner = f"{atom(rng, 'n')} {rng.choice(['AND', 'OR'])} MessageType = {quote(rng.choice(['x', 'y']))}"
        return f"{rng.choice(['', 'NOT '])}({inner}) AND MessageType IN ('x', 'y')"
    return expression(rng)


def message(rng: random.Random) -> tuple[dict[str, str], str | None]:
    props = {f: rng.choice(VALUES) for f in FIELDS if f != "TAGS" and rng.random() < 0.75}
    if rng.random() < 0.1:
        props["TAGS"] = rng.choice(TAGS)  # a property named TAGS is not the tag
    return props, (rng.choice(TAGS) if rng.random() < 0.8 else None)


def random_subscriptions(rng: random.Random, n: int) -> dict[int, object]:
    subs: dict[int, object] = {}
    for key in range(n):
        if rng.random() < 0.1:
            subs[key] = rng.choice(["*", "", "x||y", "z", " t || x ", frozenset({"y"}), frozenset(), None])
        else:
            subs[key] = compile_sql(subscription(rng))
    return subs


def agree(index: SubscriptionIndex, subs: dict, props: dict, tag: str | None) -> int:
    got = index.match(props, tag)
    assert Counter(got) == Counter(naive_match(subs, props, tag)), (props, tag)
    return len(got)


@pytest.mark.parametrize("seed, messages", [(1, 2000), (2, 500)])
def test_index_equals_naive(seed, messages):
    rng = random.Random(seed)
    subs = random_subscriptions(rng, 2000)
    index = SubscriptionIndex(("MessageType", "TAGS"))
    for key, sub in subs.items():
        index.add(key, sub)
    assert len(index) == len(subs)
    stats = index.stats()
    assert stats["bucket_entries"] > 500 and stats["scanned"] > 200  # both paths are exercised
    matched = sum(agree(index, subs, *message(rng)) for _ in range(messages))
    assert matched > messages * 20  # not vacuous


def reference(f: sql.SqlFilter):
    """The plain three-valued evaluation in source order: TRUE matches, an error does not."""
    ev = sql._compile(f._node, fast=False)

    def matches(props, tag):
        try:
            return ev(props, tag) is True
        except sql._EvalError:
            return False

    return matches


def test_fast_closures_equal_the_generic_path():
    rng = random.Random(3)
    triples = []
    for _ in range(2000):
        e = subscription(rng)
        fast, generic = compile_sql(e), sql._compile_sql(e, False)
        triples.append((fast, generic, reference(fast)))
    messages = [message(rng) for _ in range(300)]
    for fast, generic, ref in triples:
        for props, tag in messages:
            assert fast(props, tag) is generic(props, tag) is ref(props, tag), (fast.expression, props, tag)


def test_residuals_equal_the_filter():
    rng = random.Random(4)
    for _ in range(2000):
        f = compile_sql(subscription(rng))
        for field in ("MessageType", "TAGS", "a"):
            keys = f.index_keys(field)
            if keys is None:
                continue
            for _ in range(5):
                props, tag = message(rng)
                value = tag if field == "TAGS" else props.get(field)
                if value in keys:
                    assert keys[value](props, tag) is f(props, tag), (f.expression, field, props, tag)
                else:
                    assert not f(props, tag), (f.expression, field, props, tag)


def test_add_remove_replace_stay_consistent():
    rng = random.Random(5)
    pool = list(random_subscriptions(rng, 400).values())
    index = SubscriptionIndex(("TAGS", "MessageType", "a"))
    live: dict[int, object] = {}
    for step in range(3000):
        key = rng.randrange(250)
        if rng.random() < 0.35:
            assert index.remove(key) is (key in live)
            live.pop(key, None)
        else:
            sub = rng.choice(pool)
            index.add(key, sub)  # adds or replaces
            live[key] = sub
        assert len(index) == len(live) and all(k in index for k in live)
        if step % 50 == 0:
            for _ in range(40):
                agree(index, live, *message(rng))
    for key in list(live):
        index.remove(key)
    assert len(index) == 0
    assert index.stats() == {"subscriptions": 0, "everything": 0, "scanned": 0, "buckets": 0, "bucket_entries": 0}
    assert index.match({"MessageType": "x", "a": "x"}, "x") == []


def test_tag_subscriptions():
    index = SubscriptionIndex()
    index.add("all", "*")
    index.add("ab", "a||b")
    index.add("set", frozenset({"b"}))
    index.add("sql", compile_sql("TAGS = 'a' AND n > 5"))
    index.add("scan", compile_sql("n > 5"))
    assert sorted(index.match({"n": "7"}, "a")) == ["ab", "all", "scan", "sql"]
    assert sorted(index.match({}, "b")) == ["ab", "all", "set"]
    assert sorted(index.match({"n": "7"}, None)) == ["all", "scan"]
    index.add("ab", "c")  # replaced
    assert sorted(index.match({}, "a")) == ["all"]
    assert index.remove("ab") and not index.remove("ab")
    with pytest.raises(IllegalExpression):
        index.add("bad", "a||")


def test_tag_sets_follow_compile_tags():
    for expr in ["*", "", "a", "a||b", "a || b", "a||*", " a "]:
        for tag in ["a", "b", "c", None]:
            assert matcher(expr)({}, tag) is compile_tags(expr)(tag)
    assert parse_tags("a || b") == {"a", "b"} and parse_tags("*") is None


def test_without_a_tags_index_tag_subscriptions_are_scanned():
    index = SubscriptionIndex(indexed_fields=("MessageType",))
    index.add(1, "a||b")
    index.add(2, compile_sql("MessageType = 'm'"))
    assert index.stats()["scanned"] == 1 and index.stats()["bucket_entries"] == 1
    assert sorted(index.match({"MessageType": "m"}, "b")) == [1, 2]
