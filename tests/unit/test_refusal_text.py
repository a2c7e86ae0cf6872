"""Refusals stay one readable line whatever a client sent (issue 20 §2.4): a list of names it gave is
cut to its first ten and a count, and a table at its bound names its setting."""

from __future__ import annotations

from rockmq.protocol import pb
from rockmq.protocol.errors import listing, over_limit


def test_a_long_list_of_names_shows_ten_and_how_many_more():
    names = [f"topic-{i}" for i in range(100_000)]
    text = listing(names)
    assert text.startswith("topic-0, topic-1, ") and text.endswith("topic-9 ... and 99,990 more")
    assert listing(names[:10]) == ", ".join(names[:10])


def test_a_full_table_is_too_many_requests_naming_its_setting():
    error = over_limit("cannot create topic 't'", "max_topics", 100_000, "raise it")
    assert error.code == pb.TOO_MANY_REQUESTS
    assert error.message == "cannot create topic 't': max_topics (100,000) reached; raise it"
