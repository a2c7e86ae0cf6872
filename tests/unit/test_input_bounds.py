"""Issue 32 §4 and §5, the pure pieces: filter expressions' size limits (filter/tags.py), the
byte-bounded cache (bounded_cache.py) and the decision cache's handling of names (auth/authorizer.py)."""

from __future__ import annotations

import pytest

from rockmq.auth.acl import Action, Decision, Entry, Resource, group_check, topic_check
from rockmq.auth.authorizer import Authorizer
from rockmq.bounded_cache import BoundedCache
from rockmq.filter.record_filter import compile_filter
from rockmq.filter.sql import compile_sql
from rockmq.filter.tags import MAX_LENGTH, MAX_TAGS, IllegalExpression, parse_tags
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError


def test_tag_expressions_are_capped_in_length_and_tags() -> None:
    most = "||".join(f"t{i}" for i in range(MAX_TAGS))
    assert parse_tags(most) is not None and len(parse_tags(most) or ()) == MAX_TAGS
    with pytest.raises(IllegalExpression, match=f"limit is {MAX_TAGS}"):
        parse_tags(most + "||one-more")
    with pytest.raises(IllegalExpression, match=f"limit is {MAX_LENGTH}") as refused:
        compile_filter("x" * (MAX_LENGTH + 1))
    assert "xxxx" not in str(refused.value)  # the refusal does not quote the expression
    with pytest.raises(IllegalExpression, match=f"limit is {MAX_LENGTH}"):
        compile_sql("a = '" + "x" * MAX_LENGTH + "'")


def test_cache_is_bounded_in_bytes_and_entries() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=3, max_bytes=100, weigh=lambda k, v: len(k))
    cache.put("a" * 40, 1)
    cache.put("b" * 40, 2)
    cache.put("c" * 40, 3)  # 120 bytes: the oldest goes
    assert list(cache) == ["b" * 40, "c" * 40] and cache.weight == 80
    cache.put("d" * 101, 4)  # heavier than the whole budget: not kept, nothing evicted for it
    assert "d" * 101 not in cache and len(cache) == 2
    for k in "efg":
        cache.put(k, 0)
    assert list(cache) == ["e", "f", "g"] and cache.weight == 3  # at most 3 entries, however light
    cache.put("e", 5)  # replacing weighs once
    assert cache["e"] == 5 and cache.weight == 3
    cache.clear()
    assert not cache and cache.weight == 0


def test_authorizer_refuses_illegal_names_and_caches_no_denial() -> None:
    authz = Authorizer({"u": (Entry(Resource.parse("Topic:orders"), frozenset({Action.PUB}), (), Decision.ALLOW),)},
                       max_bytes=1 << 20)
    illegal = (("x" * 128, pb.ILLEGAL_TOPIC), ("a b", pb.ILLEGAL_TOPIC), ("%RETRY%" + "g" * 121, pb.ILLEGAL_CONSUMER_GROUP))
    for name, code in illegal:
        with pytest.raises(BrokerError) as refused:
            authz.refused("u", False, [topic_check(name, Action.PUB)], None)
        assert refused.value.code == code and len(refused.value.message) < 400
    with pytest.raises(BrokerError):  # a later illegal name outranks an earlier denial
        authz.refused("u", False, [group_check("g", Action.SUB), topic_check("y" * 200, Action.SUB)], None)
    for i in range(1000):  # denials of made-up names
        assert authz.refused("u", False, [topic_check(f"nope-{i}", Action.PUB)], None) is not None
    assert authz.refused("u", False, [topic_check("orders", Action.PUB)], None) is None
    assert len(authz._decisions) == 1  # only the allowed decision is remembered
