"""Priority messages' pure parts: the queue layout (broker/priority.py) and the send check
(validate.check_priority)."""

from __future__ import annotations

import pytest

from rockmq.broker import priority
from rockmq.broker.metadata import PRIORITY, TopicConfig
from rockmq.broker.validate import Checked, check_priority, check_staged
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

TOPIC = TopicConfig(name="jobs", id=1, queues=20, message_types=[PRIORITY], max_priority=9)


def test_queues_are_whole_lanes_of_levels():
    assert priority.queue_count(8, 9) == 10
    assert priority.queue_count(10, 9) == 10
    assert priority.queue_count(11, 9) == 20
    assert priority.queue_count(1, 2) == 3


def test_a_message_goes_to_its_level_in_the_picked_lane():
    assert [priority.queue_of(hint, 7, 9) for hint in (0, 9, 10, 19)] == [7, 7, 17, 17]
    assert all(priority.level_of(priority.queue_of(h, p, 9), 9) == p for h in range(20) for p in range(10))


def test_a_look_visits_the_highest_level_first_and_rotates_lanes():
    assert priority.visit_order(6, 2, 0) == [2, 5, 1, 4, 0, 3]
    assert priority.visit_order(6, 2, 1) == [5, 2, 4, 1, 3, 0]
    order = priority.visit_order(20, 9, 0)
    assert sorted(order) == list(range(20))
    assert [priority.level_of(q, 9) for q in order] == sorted((q % 10 for q in range(20)), reverse=True)


def test_max_priority_is_bounded():
    assert priority.check_max_priority(1) is None and priority.check_max_priority(priority.MAX_PRIORITY) is None
    assert priority.check_max_priority(0) == "max_priority must be 1..99, not 0"
    assert priority.check_max_priority(100) is not None


def test_check_priority_levels_and_refusals():
    assert check_priority(9, PRIORITY, False, False, TOPIC) == 9
    assert check_priority(None, PRIORITY, False, False, TOPIC) == 0  # none said: the lowest
    with pytest.raises(BrokerError) as high:
        check_priority(12, PRIORITY, False, False, TOPIC)
    assert high.value.code == pb.BAD_REQUEST and "priority must be 0..9, not 12" in high.value.message
    with pytest.raises(BrokerError) as negative:
        check_priority(-1, PRIORITY, False, False, TOPIC)
    assert negative.value.code == pb.BAD_REQUEST
    for grouped, delayed in ((True, False), (False, True)):
        with pytest.raises(BrokerError) as conflict:
            check_priority(1, PRIORITY, grouped, delayed, TOPIC)
        assert conflict.value.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    plain = TopicConfig(name="orders", id=2, queues=8)
    with pytest.raises(BrokerError) as elsewhere:
        check_priority(1, "NORMAL", False, False, plain)
    assert elsewhere.value.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert "a NORMAL message has no priority" in elsewhere.value.message


def test_priority_messages_are_not_staged():
    m = pb.Message(topic=pb.Resource(name="jobs"), body=b"x")
    m.system_properties.priority = 3
    with pytest.raises(BrokerError) as refused:
        check_staged(m, Checked(TOPIC, PRIORITY))
    assert refused.value.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE and "cannot be staged" in refused.value.message


def test_a_pulled_queue_waits_for_probes_and_higher_levels_with_work():
    from rockmq.client import Queue
    from rockmq.client.push.fetcher import Ranks
    from rockmq.client.push.owned import OwnedQueue

    low, mid, high = (OwnedQueue.at(Queue("jobs", "b0", "127.0.0.1:9000", q), 0) for q in range(3))
    ranks = Ranks(probing={high})
    assert ranks.outranked(low)  # high's level is not known yet
    ranks.probing.clear()
    for owned, level in ((low, 0), (mid, 1), (high, 2)):
        ranks.learn(owned, level)
    assert ranks.ranked == [mid, high] and not ranks.outranked(low)  # nothing waits anywhere
    high.backlog = True
    assert ranks.outranked(low) and ranks.outranked(mid) and not ranks.outranked(high)
    high.backlog, mid.cached = False, 1
    assert ranks.outranked(low) and not ranks.outranked(mid)
    ranks.forget(mid)
    assert not ranks.outranked(low)
