"""The pure part of broker/lane_fallback.py: the ranges the base took of a lane stay merged,
trimmed and capped, and a pull's zone says what the base or the lane may take."""

from __future__ import annotations

from rockmq.broker.lane_fallback import (
    MAX_RANGES,
    LaneShare,
    add,
    base_zone,
    decode,
    encode,
    lane_groups,
    lane_zone,
    taken_spans,
    trim,
)
from rockmq.broker.lanes import Route


def test_consecutive_pulls_make_one_range_and_overlaps_merge():
    ranges = add(add(add((), 10, 20), 20, 25), 30, 40)
    assert ranges == ((10, 25), (30, 40))
    assert add(ranges, 5, 35) == ((5, 40),)
    assert add(ranges, 26, 28) == ((10, 25), (26, 28), (30, 40))


def test_ranges_below_the_committed_offsets_go_and_the_count_is_capped_oldest_first():
    assert trim(((0, 5), (10, 20)), 5) == ((10, 20),)
    assert trim(((0, 5), (10, 20)), 12) == ((10, 20),)
    assert trim(((0, 5),), -1) == ((0, 5),)
    ranges: tuple[tuple[int, int], ...] = ()
    for i in range(MAX_RANGES + 3):
        ranges = add(ranges, 10 * i, 10 * i + 5)
    assert len(ranges) == MAX_RANGES and ranges[0] == (30, 35)
    assert decode(encode(ranges)) == ranges and decode(None) == ()


def test_a_lane_pull_skips_what_the_base_took_and_stops_before_the_next_range():
    share = LaneShare("dev1", True, -1, ((10, 20), (30, 40)))
    route = Route("dev1", frozenset({"dev1"}))
    assert lane_zone(12, route, share).skip_to == 20
    zone = lane_zone(20, route, share)
    assert (zone.skip_to, zone.end, zone.route) == (None, 30, route)
    assert lane_zone(40, route, share).end is None


def test_a_base_pull_takes_by_fallback_only_above_the_lanes_position_and_records_it():
    dead = LaneShare("dev1", False, 15, ())
    zone = base_zone(10, None, [dead])
    assert zone.route == Route("", frozenset({"dev1"})) and zone.end == 15 and zone.record == ()
    zone = base_zone(15, None, [dead])
    assert zone.route is None and zone.end is None and zone.record == ("dev1",)


def test_a_base_pull_rereads_what_it_took_even_when_the_lane_is_live_again():
    live = LaneShare("dev1", True, 0, ((10, 20),))
    route = Route("", frozenset({"dev1", "dev2"}))
    zone = base_zone(12, route, [live])
    assert zone.route == Route("", frozenset({"dev2"})) and zone.end == 20 and zone.record == ()
    zone = base_zone(20, route, [live])
    assert zone.route == route and zone.end is None
    assert base_zone(5, route, [live]).end == 10


def test_lane_groups_are_found_by_their_names():
    assert lane_groups(["a", "a%LANE%dev1", "a%LANE%dev2", "b%LANE%x", "c%LANE%"]) == {
        "a": {"dev1": "a%LANE%dev1", "dev2": "a%LANE%dev2"}, "b": {"x": "b%LANE%x"}}


def test_what_the_base_filter_passed_over_splits_the_span_and_stays_the_lanes():
    assert taken_spans(10, 20, []) == []  # no lane message in it: nothing to record
    assert taken_spans(10, 20, [(12, True), (15, True)]) == [(10, 20)]
    assert taken_spans(10, 20, [(12, True), (15, False), (18, True)]) == [(10, 15), (16, 20)]
    assert taken_spans(10, 20, [(12, False), (15, False)]) == []  # lane_fallback=False: none was the base's
    assert taken_spans(10, 20, [(10, False), (11, True), (19, False)]) == [(11, 19)]
