"""Key encodings: byte order must be numeric order, and every key round-trips."""

from hypothesis import given
from hypothesis import strategies as st

from rockmq.store import keys

u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**63 - 1)


@given(u32, u32, u64, u64)
def test_log_keys_sort_by_offset(topic, queue, a, b):
    ka, kb = keys.log_key(topic, queue, a), keys.log_key(topic, queue, b)
    assert (ka < kb) == (a < b)
    assert keys.parse_log_key(ka) == (topic, queue, a)
    assert ka.startswith(keys.queue_prefix(topic, queue))


@given(u64, u64, u32, u32, u64)
def test_inflight_keys_sort_by_deadline_first(d1, d2, group, topic, checkpoint):
    k1 = keys.inflight_key(d1, group, topic, checkpoint)
    k2 = keys.inflight_key(d2, 0, 0, 0)
    if d1 < d2:
        assert k1 < k2
    assert keys.parse_inflight_key(k1) == (d1, group, topic, checkpoint)
    assert (k1 < keys.deadline_bound(d2)) == (d1 < d2)


def test_prefix_end_bounds_exactly_the_prefix():
    p = keys.queue_prefix(7, 3)
    end = keys.prefix_end(p)
    assert keys.log_key(7, 3, 2**63 - 1) < end <= keys.log_key(7, 4, 0)
    assert keys.prefix_end(b"\x01\xff") == b"\x02"


def test_dedup_keys_sort_by_bucket_first():
    assert keys.dedup_key(5, 999, "ZZZ") < keys.dedup_bucket_start(6) <= keys.dedup_key(6, 0, "A")


def test_retry_value_round_trip():
    assert keys.parse_retry_value(keys.retry_value(3, 99, 2)) == (3, 99, 2)


def test_dedup_value_round_trip():
    assert keys.parse_dedup_value(keys.dedup_value(3, 99)) == (3, 99, "", "")
    assert keys.parse_dedup_value(keys.dedup_value(0xFFFFFFFF, 0, "txn-1", "")) == (0xFFFFFFFF, 0, "txn-1", "")
    assert keys.parse_dedup_value(keys.dedup_value(1, 2, "", "RH")) == (1, 2, "", "RH")
