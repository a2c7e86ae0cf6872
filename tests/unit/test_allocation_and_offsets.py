"""The push consumer's pure parts: queue allocation strategies, the sliding-window offset, the local offset file."""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rockmq.client.allocation import ByConfig, ConsistentHash, average, average_by_circle, by_environment
from rockmq.client.offsets import LocalOffsetStore, OffsetWindow, offset_key
from rockmq.client.queues import Queue


def qs(n: int, broker: str = "b0", topic: str = "T") -> list[Queue]:
    return [Queue(topic, broker, f"{broker}:8081", i) for i in range(n)]


queue_lists = st.lists(st.builds(lambda t, b, i: Queue(t, b, f"{b}:8081", i),
                                 st.sampled_from(["T", "U"]), st.sampled_from(["b0", "b1", "b2"]), st.integers(0, 7)),
                       unique=True, max_size=30)
member_lists = st.lists(st.text("abcxyz@0123456789", min_size=1, max_size=6), unique=True, max_size=8)
FIXED = {"average": average, "average_by_circle": average_by_circle, "consistent_hash": ConsistentHash(),
         "consistent_hash_1": ConsistentHash(virtual_nodes=1)}


def shares(strategy, members, queues) -> dict[str, list[Queue]]:
    return {m: strategy(m, members, queues) for m in members}


def assert_partition(parts: dict[str, list[Queue]], queues) -> None:
    got = [q for part in parts.values() for q in part]
    assert len(got) == len(set(got)), "a queue was given twice"
    assert set(got) == set(queues)


@pytest.mark.parametrize("name", FIXED)
@given(members=member_lists, queues=queue_lists, data=st.data())
def test_fixed_strategies_partition_the_queues_whatever_the_input_order(name, members, queues, data):
    strategy = FIXED[name]
    parts = shares(strategy, members, queues)
    assert_partition(parts, queues if members else [])
    members2, queues2 = data.draw(st.permutations(members)), data.draw(st.permutations(queues))
    assert shares(strategy, members2, queues2 + queues2[:3]) == parts  # order and duplicates do not matter
    assert strategy("stranger", members, queues) == []


@given(members=member_lists.filter(bool), queues=queue_lists, data=st.data())
def test_by_config_partitions_when_the_mapping_covers_the_topic(members, queues, data):
    owners = [data.draw(st.sampled_from(members)) for _ in queues]
    mapping: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
    for q, m in zip(queues, owners):
        if (q.broker, q.queue_id) not in {p for ps in mapping.values() for p in ps}:
            mapping[m].append((q.broker, q.queue_id))
    strategy = ByConfig(mapping)
    assert_partition(shares(strategy, members, queues), queues)
    assert shares(strategy, members, data.draw(st.permutations(queues))) == shares(strategy, members, queues)


def test_by_config_gives_the_configured_queues_and_skips_unknown_ones():
    strategy = ByConfig({"c1": [("b0", 1), ("b0", 9)], "c2": [("b0", 0)]})
    assert strategy("c1", ["c2", "c1"], qs(3)) == [qs(3)[1]]
    assert strategy("c2", ["c1", "c2"], qs(3)) == [qs(3)[0]]
    assert strategy("c3", ["c1", "c2", "c3"], qs(3)) == []  # unnamed members and queues get nothing
    assert strategy("c1", ["c2"], qs(3)) == []


def test_average_gives_contiguous_blocks_and_rebalances():
    queues = qs(8)
    parts = shares(average, ["c2", "c0", "c1"], queues[::-1])
    assert [len(parts[m]) for m in ["c0", "c1", "c2"]] == [3, 3, 2]
    assert average("c0", ["c0", "c1", "c2"], queues) == queues[0:3]
    assert average("c1", ["c0", "c1", "c2"], queues) == queues[3:6]
    assert average("c2", ["c0", "c1", "c2"], queues) == queues[6:8]
    assert [average(m, ["c0", "c1", "c2", "c3"], queues) for m in ["c0", "c1", "c2", "c3"]] == \
        [queues[0:2], queues[2:4], queues[4:6], queues[6:8]]
    assert [average(m, ["c0", "c1", "c2"], qs(2)) for m in ["c0", "c1", "c2"]] == [qs(2)[:1], qs(2)[1:], []]


def test_queues_sort_by_topic_broker_then_queue_id():
    queues = qs(2, "b1") + qs(2, "b0") + qs(1, "b0", topic="A")
    assert average_by_circle("c0", ["c0"], queues) == [qs(1, "b0", "A")[0], *qs(2, "b0"), *qs(2, "b1")]
    assert average_by_circle("c1", ["c0", "c1"], queues) == [qs(2, "b0")[0], qs(2, "b1")[0]]


def owners(strategy, members, queues) -> dict[Queue, str]:
    return {q: m for m, part in shares(strategy, members, queues).items() for q in part}


def moved(strategy, queues, before, after) -> list[Queue]:
    old, new = owners(strategy, before, queues), owners(strategy, after, queues)
    return [q for q in queues if old[q] != new[q]]


def test_consistent_hash_moves_mostly_the_newcomers_queues():
    queues, before, after = qs(20, "b0") + qs(20, "b1"), ["c0", "c1", "c2", "c3"], ["c0", "c1", "c2", "c3", "c4"]
    hashed = moved(ConsistentHash(), queues, before, after)
    to_newcomer = [q for q in hashed if owners(ConsistentHash(), after, queues)[q] == "c4"]
    assert len(to_newcomer) == 8, "the newcomer gets its even share"
    assert len(hashed) < len(moved(average, queues, before, after)) * 0.75


def test_consistent_hash_joins_move_little_more_than_the_newcomers_share():
    """Over a fixed sample of joins (1..64 queues on 3 brokers, 1..7 members joined by an 8th),
    bounded loads move at most a quarter more queues than the newcomer takes, and fewer than `average`."""
    strategy, rng = ConsistentHash(), random.Random(17)
    total = to_newcomer = by_average = 0
    for _ in range(200):
        queues = [q for b in range(3) for q in qs(rng.randint(1, 21), f"b{b}")]
        members = [f"{rng.getrandbits(48):012x}@host" for _ in range(rng.randint(1, 7))]
        newcomer, joined = "ffff@new", [*members, "ffff@new"]
        hashed = moved(strategy, queues, members, joined)
        total += len(hashed)
        to_newcomer += len(strategy(newcomer, joined, queues))
        by_average += len(moved(average, queues, members, joined))
    assert total <= to_newcomer * 1.25 and total < by_average, (total, to_newcomer, by_average)


@pytest.mark.parametrize("virtual_nodes", [1, 10, 100])
def test_consistent_hash_splits_within_one_of_even(virtual_nodes):
    """Every queue count 1..64 (over 1..3 brokers) with 1..8 members: no member has more than one
    queue more than another (a plain ring split 8 queues over 3 members 0/1/7)."""
    strategy = ConsistentHash(virtual_nodes)
    for n in range(1, 65):
        queues = [q for b in range(3) for q in qs(n // 3 + (b < n % 3), f"b{b}")]
        for count in range(1, 9):
            members = [f"10.0.0.{count}@{i}" for i in range(count)]
            parts = shares(strategy, members, queues)
            assert_partition(parts, queues)
            sizes = sorted(len(p) for p in parts.values())
            assert sizes[-1] - sizes[0] <= 1, (n, count, sizes)


def test_by_environment_owns_its_slice_of_the_sorted_queues():
    queues = qs(3, "b1") + qs(3, "b0")  # sorted: b0/0 b0/1 b0/2 b1/0 b1/1 b1/2
    assert by_environment(1)("dev", ["dev"], queues) == [qs(3, "b0")[0]]
    assert by_environment(3)("dev", ["dev"], queues) == [qs(3, "b0")[2]]
    assert by_environment(2, 2)("dev", ["dev"], queues) == [qs(3, "b0")[2], qs(3, "b1")[0]]
    assert by_environment(2, 2)("x", ["x", "y"], queues) == [qs(3, "b0")[2]]
    assert by_environment(2, 2)("y", ["x", "y"], queues) == [qs(3, "b1")[0]]
    assert by_environment(2, 2)("z", ["x", "y"], queues) == []
    with pytest.raises(ValueError, match="environment 4 needs queues"):
        by_environment(4, 2)("dev", ["dev"], queues)


@given(queues=queue_lists, k=st.integers(1, 4), data=st.data())
def test_environments_partition_the_queues_they_cover(queues, k, data):
    environments = len(queues) // k
    parts: dict[str, list[Queue]] = {}
    for env in range(1, environments + 1):
        members = data.draw(st.lists(st.sampled_from("abcdef"), min_size=1, unique=True))
        parts |= {f"{env}/{m}": part for m, part in shares(by_environment(env, k), members, queues).items()}
    covered = sorted(queues, key=lambda q: (q.topic, q.broker, q.queue_id))[:environments * k]
    assert_partition(parts, covered)


@pytest.mark.parametrize("make", [lambda: ConsistentHash(0), lambda: ConsistentHash(2.5), lambda: by_environment(0),
                                  lambda: by_environment(1, 0), lambda: by_environment(True),
                                  lambda: ByConfig({"c1": [("b0", 0)], "c2": [("b0", 0)]}),
                                  lambda: ByConfig({"c1": [("b0", -1)]}), lambda: ByConfig({"c1": ["b0"]}),
                                  lambda: ByConfig({"": [("b0", 0)]}), lambda: average("c0", "c0", qs(1)),
                                  lambda: average("c0", ["c0", ""], qs(1)), lambda: average("c0", ["c0"], [("b0", 0)])])
def test_bad_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


ops = st.lists(st.one_of(st.tuples(st.just("add"), st.integers(1, 3)), st.tuples(st.just("done"), st.integers(0, 60)),
                         st.tuples(st.just("start"), st.integers(0, 40))), max_size=80)


@given(ops)
def test_offset_window_matches_a_naive_model(ops):
    window, pending, next_offset = OffsetWindow(), set(), None
    assert window.committable() is None
    for op, n in ops:
        if op == "add":  # gap n - 1: filtered messages are never added
            offset = (next_offset or 0) + n - 1
            window.add(offset)
            pending.add(offset)
            next_offset = offset + 1
        elif op == "done":  # even n: an offset in process; odd n: maybe a stale or repeated one
            offset = sorted(pending)[n % len(pending)] if pending and n % 2 == 0 else n
            assert window.done(offset) is (offset in pending)
            pending.discard(offset)
        else:
            window.start(n)
            pending, next_offset = set(), n
        assert window.committable() == (min(pending) if pending else next_offset)
        assert window.in_flight == len(pending)


def test_offset_window_holds_at_the_oldest_unfinished_message():
    window = OffsetWindow()
    window.start(3)
    assert window.committable() == 3
    for offset in (3, 4, 6, 7, 8):  # 5 was filtered out
        window.add(offset)
    for offset in (3, 6, 7, 8):
        window.done(offset)
    assert window.committable() == 4 and window.in_flight == 1
    window.done(4)
    assert window.committable() == 9 and window.in_flight == 0
    with pytest.raises(ValueError):
        window.add(8)
    with pytest.raises(ValueError):
        window.start(-1)


def test_offset_store_round_trip(tmp_path):
    store = LocalOffsetStore(tmp_path / "consumers" / "c1.json")
    assert store.load() == {}
    offsets = {offset_key(q): 10 * q.queue_id for q in qs(3)}
    store.save(offsets)
    assert store.load() == offsets == {"T|b0|0": 0, "T|b0|1": 10, "T|b0|2": 20}
    store.save({"T|b0|0": 5})
    assert LocalOffsetStore(store.path).load() == {"T|b0|0": 5}
    assert os.listdir(tmp_path / "consumers") == ["c1.json"]


def test_offset_store_survives_a_crash_mid_save(tmp_path, monkeypatch):
    store = LocalOffsetStore(tmp_path / "c1.json")
    store.save({"T|b0|0": 7})
    with open(store.path + ".tmp", "w") as f:  # a save that died while writing
        f.write('{"T|b0|0": 9, "T|b')
    assert store.load() == {"T|b0|0": 7}

    def crash(*args):
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        store.save({"T|b0|0": 8})
    monkeypatch.undo()
    assert store.load() == {"T|b0|0": 7}
    store.save({"T|b0|0": 8})
    assert store.load() == {"T|b0|0": 8} and not os.path.exists(store.path + ".tmp")


def test_offset_store_rejects_bad_contents(tmp_path):
    store = LocalOffsetStore(tmp_path / "c1.json")
    for text in ("{not json", json.dumps([1]), json.dumps({"T|b0|0": -1}), json.dumps({"T|b0|0": "3"})):
        (tmp_path / "c1.json").write_text(text)
        with pytest.raises(ValueError, match="c1.json"):
            store.load()
    with pytest.raises(ValueError):
        store.save({"T|b0|0": 1.5})


def test_flow_sizes_pulls_to_the_bytes_left_and_takes_what_fits():
    from rockmq.client.flow import fitting, pull_size, typical

    assert pull_size(32, 32 * 1024, 0) == 32, "no size seen yet: the room"
    assert pull_size(32, 32 * 1024, 8 * 1024) == 4
    assert pull_size(32, 100, 8 * 1024) == 1 and pull_size(3, 10**9, 1) == 3
    assert fitting([8, 8, 8, 8, 8], 32, cache_empty=True) == 4
    assert fitting([8, 30], 32, cache_empty=False) == 1
    assert fitting([40, 1], 32, cache_empty=True) == 1, "larger than the limit: alone, when nothing is cached"
    assert fitting([40, 1], 32, cache_empty=False) == 0
    assert fitting([], 32, cache_empty=True) == 0
    assert typical(0, [100]) == 100 and typical(100, [200]) == 120 and typical(5, []) == 5
