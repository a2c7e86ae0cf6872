"""Offset arithmetic and option parsing of the Spark source: pure, no broker, no JVM."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rockmq.spark import offsets as om
from rockmq.spark.fetch import SourceError
from rockmq.spark.source import SourceOptions


def q(topic: str, broker: str, qid: int, lo: int, hi: int) -> om.QueueState:
    return om.QueueState(topic, broker, qid, f"{broker}.local:8081", lo, hi)


def test_parse_spec_forms():
    assert om.parse_spec(None, "earliest", "o") == om.OffsetSpec("earliest")
    assert om.parse_spec(" LATEST ", "earliest", "o") == om.OffsetSpec("latest")
    assert om.parse_spec("1767225600000", "latest", "o") == om.OffsetSpec("timestamp", 1_767_225_600_000)
    assert om.parse_spec("2026-01-01T00:00:00Z", "latest", "o").timestamp_ms == 1_767_225_600_000
    assert om.parse_spec("2026-01-01T01:00:00+01:00", "latest", "o").timestamp_ms == 1_767_225_600_000
    assert om.parse_spec("2026-01-01 00:00:00.250Z", "latest", "o").timestamp_ms == 1_767_225_600_250
    with pytest.raises(ValueError, match=r"^o: .*no zone.*Z.*\+01:00"):  # the CLI and the client refuse it too
        om.parse_spec("2026-01-01 00:00:00.250", "latest", "o")
    spec = om.parse_spec('{"orders": {"b1:0": 5, "b2:0": -2, "1": -1}}', "latest", "o")
    assert spec.kind == "json" and spec.per_queue == {"orders": {"b1:0": 5, "b2:0": -2, "1": -1}}
    for bad in ("yesterday", '{"orders": [1]}', '{"orders": {"b1:0": -3}}', '{"orders": {"b1:0": "5"}}', "{not json"):
        with pytest.raises(ValueError, match="^o"):
            om.parse_spec(bad, "latest", "o")


def test_resolve_each_form():
    queues = [q("orders", "b1", 0, 10, 50), q("orders", "b2", 0, 0, 7), q("audit", "b1", 0, 3, 3)]
    at_time = lambda queue, ms: queue.min_offset + ms  # noqa: E731 - stand-in for the broker's lookup
    assert om.resolve(om.OffsetSpec("earliest"), queues, at_time, "earliest") == {"orders": {"b1:0": 10, "b2:0": 0},
                                                                                  "audit": {"b1:0": 3}}
    assert om.resolve(om.OffsetSpec("latest"), queues, at_time, "earliest") == {"orders": {"b1:0": 50, "b2:0": 7},
                                                                                "audit": {"b1:0": 3}}
    assert om.resolve(om.OffsetSpec("timestamp", 2), queues, at_time, "earliest")["orders"] == {"b1:0": 12, "b2:0": 2}
    spec = om.OffsetSpec("json", per_queue={"orders": {"b1:0": 20, "b2:0": -1}})
    assert om.resolve(spec, queues, at_time, "earliest") == {"orders": {"b1:0": 20, "b2:0": 7}, "audit": {"b1:0": 3}}
    assert om.resolve(spec, queues, at_time, "latest")["audit"] == {"b1:0": 3}


def test_json_queues_are_checked():
    single = [q("orders", "broker-a", 0, 0, 5), q("orders", "broker-a", 1, 0, 5)]
    om.check_json_queues(om.OffsetSpec("json", per_queue={"orders": {"1": 2}}), single, "s")  # bare id: one broker
    assert om.resolve(om.OffsetSpec("json", per_queue={"orders": {"1": 2}}), single, None, "latest") == {
        "orders": {"broker-a:0": 5, "broker-a:1": 2}}
    cluster = [q("orders", "b1", 0, 0, 5), q("orders", "b2", 0, 0, 5)]
    with pytest.raises(ValueError, match="several brokers"):
        om.check_json_queues(om.OffsetSpec("json", per_queue={"orders": {"0": 2}}), cluster, "s")
    with pytest.raises(ValueError, match="no queue 'b3:0'"):
        om.check_json_queues(om.OffsetSpec("json", per_queue={"orders": {"b3:0": 2}}), cluster, "s")
    with pytest.raises(ValueError, match="topic 'audit'"):
        om.check_json_queues(om.OffsetSpec("json", per_queue={"audit": {"b1:0": 2}}), cluster, "s")


def test_ranges_split_and_new_queues_start_at_zero():
    start = {"orders": {"b1:0": 10, "b1:1": 5}}
    end = {"orders": {"b1:0": 35, "b1:1": 5, "b2:0": 3}, "audit": {"b1:10": 2}}
    assert [(r.topic, r.broker, r.queue_id, r.start, r.end) for r in om.ranges(start, end, 10)] == [
        ("audit", "b1", 10, 0, 2),
        ("orders", "b1", 0, 10, 20), ("orders", "b1", 0, 20, 30), ("orders", "b1", 0, 30, 35),
        ("orders", "b2", 0, 0, 3)]
    assert om.behind({"orders": {"b1:0": 10}}, {"orders": {"b1:0": 4}}) == [("orders", "b1:0", 10, 4)]
    assert om.merge_forward({"orders": {"b1:0": 10, "b9:0": 4}}, {"orders": {"b1:0": 12}}) == {"orders": {"b1:0": 12, "b9:0": 4}}


offsets_maps = st.dictionaries(st.sampled_from(["t1", "t2"]), st.dictionaries(st.sampled_from(["b1:0", "b1:1", "b2:0", "b2:7"]),
                                                                                st.integers(0, 10_000), max_size=4), max_size=2)


@given(offsets_maps, offsets_maps, st.none() | st.integers(1, 20_000))
def test_rate_limit_never_exceeds_and_never_goes_back(start, extra, limit):
    available = {t: {k: start.get(t, {}).get(k, 0) + n for k, n in qs.items()} for t, qs in extra.items()}
    end = om.rate_limit(start, available, limit)
    taken = sum(end[t][k] - start.get(t, {}).get(k, 0) for t in end for k in end[t])
    backlog = sum(available[t][k] - start.get(t, {}).get(k, 0) for t in available for k in available[t])
    assert taken == (backlog if limit is None else min(limit, backlog))
    for t, qs in end.items():
        for k, e in qs.items():
            assert start.get(t, {}).get(k, 0) <= e <= available[t][k]
    assert om.rate_limit(start, available, limit) == end  # deterministic


def test_rate_limit_is_proportional():
    end = om.rate_limit({"t": {"a:0": 0, "a:1": 100}}, {"t": {"a:0": 900, "a:1": 200}}, 100)
    assert end == {"t": {"a:0": 90, "a:1": 110}}


def test_lag_from_progress():
    source = {"endOffset": '{"t": {"b:0": 5, "b:1": 7}}', "latestOffset": '{"t": {"b:0": 9, "b:1": 7, "b:2": 3}}'}
    assert om.lag(source) == {"t": {"b:0": 4, "b:1": 0, "b:2": 3}}


def test_options():
    opts = SourceOptions.parse({"Endpoint": "h:1", "TOPIC": " a, b ,a", "maxMessagesPerTrigger": "7"}, streaming=True)
    assert (opts.endpoint, opts.topics, opts.max_per_trigger, opts.starting.kind) == ("h:1", ("a", "b"), 7, "latest")
    assert SourceOptions.parse({"endpoint": "h:1", "topic": "a"}, streaming=False).starting.kind == "earliest"
    bad = [({"topic": "a"}, "endpoint"), ({"endpoint": "h:1"}, "topic"),
           ({"endpoint": "h:1", "topic": "a", "endingOffsets": "latest"}, "batch reads"),
           ({"endpoint": "h:1", "topic": "a", "maxMessagesPerTrigger": "0"}, "positive"),
           ({"endpoint": "h:1", "topic": "a", "failOnDataLoss": "maybe"}, "true or false"),
           ({"endpoint": "h:1", "topic": "a", "startingOffsets": "soon"}, "startingOffsets")]
    for options, words in bad:
        with pytest.raises(SourceError, match=words):
            SourceOptions.parse(options, streaming=True)


def test_expired_lite_topics_leave_the_checkpoint_only_after_a_complete_listing():
    offsets = {"replies": {"b:65536": 3, "b:65537": 1}, "orders": {"b:0": 9}}
    listed = [om.QueueState("replies", "b", 65_537, "e", 0, 1, "s2"), om.QueueState("orders", "b", 0, "e", 0, 9)]
    assert om.forget_gone(offsets, {"replies"}, listed) == {"replies": {"b:65537": 1}, "orders": {"b:0": 9}}
    assert om.forget_gone(offsets, set(), listed) == offsets  # a broker missing from the listing: keep every position
