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


@given(u32, st.integers(0, 2**32 - 2), u64, u32, u64, st.lists(st.text(min_size=1, max_size=40), max_size=3))
def test_index_entries_fall_in_their_lookups_ranges(topic, hour, store_ms, queue, offset, message_keys):
    """What `MessageIndex.add` writes is what its lookups read: the id entry under the hour's id
    head, each key entry between the key's time bounds and parsing back, and all below the next hour."""
    id_head, key_head = keys.index_heads(topic, hour)
    assert keys.parse_index_position(keys.index_position(queue, offset)) == (queue, offset)
    assert keys.index_id_key(id_head, "01AB") == id_head + b"01AB" < keys.index_hour(topic, hour + 1)
    entries = keys.index_key_entries(key_head, store_ms, queue, offset, message_keys)
    assert len(entries) == len(message_keys)
    for key, entry in zip(message_keys, entries, strict=True):
        prefix = keys.index_key_prefix(key_head, key)
        assert keys.index_time_bound(prefix, store_ms) <= entry < keys.index_time_bound(prefix, store_ms + 1)
        assert keys.parse_index_key_tail(entry) == (store_ms, queue, offset)
        assert keys.index_hour(topic, hour) <= entry < keys.index_hour(topic, hour + 1)
