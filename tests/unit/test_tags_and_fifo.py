"""Tag expressions and the FIFO queue locks."""

import pytest

from rockmq.broker.pop.fifo import FifoLocks
from rockmq.filter.tags import IllegalExpression, compile_tags


@pytest.mark.parametrize(
    "expr, tag, expected",
    [("*", "a", True), ("*", None, True), ("", None, True), ("a", "a", True), ("a", "b", False),
     ("a||b", "b", True), ("a || b", "a", True), ("a||b", "c", False), ("a", None, False), ("a||*", "z", True)],
)
def test_tag_expressions(expr, tag, expected):
    assert compile_tags(expr)(tag) is expected


@pytest.mark.parametrize("expr", ["a||", "||b", "a|| ||b"])
def test_bad_tag_expressions(expr):
    with pytest.raises(IllegalExpression):
        compile_tags(expr)


def test_fifo_queue_is_held_until_everything_settles():
    locks, q = FifoLocks(), (1, 2, 0)
    assert not locks.held(q)
    locks.delivered(q, first_time=True)
    locks.delivered(q, first_time=True)
    assert locks.held(q) and not locks.redeliverable(q)
    locks.revived(q)  # one expired: waits for the other to settle
    assert not locks.redeliverable(q)
    locks.settled(q, was_inflight=True)  # the other is acked
    assert locks.held(q) and locks.redeliverable(q)
    locks.delivered(q, first_time=False)  # the redelivery goes out
    locks.settled(q, was_inflight=True)
    assert not locks.held(q) and locks.redeliverable(q)
