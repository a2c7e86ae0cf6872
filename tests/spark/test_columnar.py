"""The column-wise record decoder against the protobuf one (the oracle), on records made exactly as
the broker makes them (records.seal + records.place); the Arrow schema against Spark's. No broker,
no JVM."""

from __future__ import annotations

import itertools
from array import array

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rockmq.protocol import pb, records
from rockmq.spark import columnar
from rockmq.spark.arrow import SCHEMA, decode_simple, record_slices

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def sealed(i: int, body: bytes, tag: str | None, keys: list[str], props: dict[str, str], born_ms: int | None,
           group: str | None = None, extra_sp: bool = False) -> bytes:
    m = pb.Message(topic=pb.Resource(name="orders"), body=body, user_properties=props)
    sp = m.system_properties
    sp.message_id = f"01{i:032X}"
    sp.keys.extend(keys)
    sp.born_host = "10.0.0.1"
    if born_ms is not None:
        sp.born_timestamp.FromMilliseconds(born_ms)
    if tag is not None:
        sp.tag = tag
    if group is not None:
        sp.message_group = group
    if extra_sp:
        sp.delivery_timestamp.FromMilliseconds(1_800_000_000_123)
        sp.trace_context = "trace"
    return records.place(records.seal(m, "127.0.0.1:8081"), 2, i, 1_767_225_600_000 + i)


def pack(recs: list[bytes]) -> tuple[bytes, bytes]:
    return b"".join(recs), array("i", itertools.accumulate(map(len, recs), initial=0)).tobytes()


def rows(batch: pa.RecordBatch) -> list[dict]:
    out = batch.to_pylist()
    for r in out:
        r["properties"] = dict(r["properties"])  # a map's entry order is the serializer's hash order
    return out


message = st.tuples(
    st.binary(max_size=3000) | st.sampled_from([b"", b"x" * 20_000]),
    st.none() | text,
    st.lists(text, max_size=4),
    st.dictionaries(text, text, max_size=5),
    st.none() | st.integers(0, 4_102_444_800_000),
    st.none() | text.filter(bool),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(message, min_size=1, max_size=40))
def test_fast_decoder_matches_protobuf(messages):
    recs = [sealed(i, *m) for i, m in enumerate(messages)]
    data, offsets = pack(recs)
    fast = columnar.decode_fast("orders", "broker-a", 2, 100, data, offsets, len(recs))
    slow = decode_simple("orders", "broker-a", 2, 100, record_slices(data, offsets, len(recs)))
    assert fast.schema.equals(SCHEMA) and slow.schema.equals(SCHEMA)
    assert rows(fast) == rows(slow)


def test_columns_hold_what_was_sent():
    recs = [sealed(0, b"\x00body", "paid", ["k1", "k2"], {"region": "eu"}, 1_767_225_600_123),
            sealed(1, b"", None, [], {}, None)]
    data, offsets = pack(recs)
    a, b = columnar.decode("orders", "broker-a", 2, 7, data, offsets, 2).to_pylist()
    assert (a["topic"], a["broker"], a["queue_id"], a["queue_offset"]) == ("orders", "broker-a", 2, 7)
    assert (a["message_id"], a["tag"], a["keys"], dict(a["properties"]), a["body"]) == (f"01{0:032X}", "paid", ["k1", "k2"],
                                                                                         {"region": "eu"}, b"\x00body")
    assert a["born_timestamp"].isoformat() == "2026-01-01T00:00:00.123000+00:00"
    assert a["store_timestamp"].isoformat() == "2026-01-01T00:00:00+00:00"
    assert (b["queue_offset"], b["tag"], b["keys"], b["properties"], b["body"], b["born_timestamp"]) == (
        8, None, [], [], b"", None)
    assert a["lite_topic"] is None and b["lite_topic"] is None


def test_a_lite_topics_batch_names_it_on_both_paths():
    recs = [sealed(i, b"x", None, [], {}, None) for i in range(3)]
    data, offsets = pack(recs)
    fast = columnar.decode("replies", "broker-a", 65_536, 0, data, offsets, 3, lite_topic="session-1")
    slow = decode_simple("replies", "broker-a", 65_536, 0, record_slices(data, offsets, 3), lite_topic="session-1")
    assert [r["lite_topic"] for r in fast.to_pylist()] == ["session-1"] * 3 and rows(fast) == rows(slow)


def test_a_record_of_another_version_is_a_clear_error_on_both_paths():
    good = sealed(0, b"abc", "t", ["k"], {"p": "v"}, 1_000)
    other_version = bytes([2]) + good[1:]
    with pytest.raises(records.RecordVersionError, match="record version 2 .* reads version 1"):
        columnar.decode("orders", "b", 0, 0, *pack([good, other_version]), 2)
    with pytest.raises(records.RecordVersionError, match="record version 2"):
        decode_simple("orders", "b", 0, 0, [good, other_version])


def test_outside_the_layout_falls_back_to_protobuf():
    good = sealed(0, b"abc", "t", ["k"], {"p": "v"}, 1_000)
    # lengths that run past their record: the fast path refuses them rather than read another record's bytes
    header = records.HEADER
    version, store_ms, tag_len, group_len, rest_len = header.unpack_from(good)
    long_rest = header.pack(version, store_ms, tag_len, group_len, rest_len + 500) + good[header.size:]
    cut_body = good[:header.size + tag_len + group_len + rest_len - 2]  # ends inside the body
    for bad in (long_rest, cut_body):
        with pytest.raises((columnar.Fallback, pa.ArrowIndexError)):
            columnar.decode_fast("orders", "b", 0, 0, *pack([bad, good]), 2)
    # an unknown fixed32 field (wire type 5) in the message: protobuf skips it, the walk hands over
    rest_at = header.size + tag_len + group_len
    fixed32 = (header.pack(version, store_ms, tag_len, group_len, rest_len + 5) + good[header.size:rest_at]
               + b"\x2d\x01\x02\x03\x04" + good[rest_at:])
    with pytest.raises(columnar.Fallback, match="wire type"):
        columnar.decode_fast("orders", "b", 0, 0, *pack([good, fixed32]), 2)
    assert rows(columnar.decode("orders", "b", 0, 0, *pack([good, fixed32]), 2))[1]["body"] == b"abc"


def test_arrow_schema_is_what_spark_expects():
    from pyspark.sql.pandas.types import to_arrow_schema

    from rockmq.spark.source import SCHEMA as SPARK_SCHEMA

    assert to_arrow_schema(SPARK_SCHEMA, timezone="UTC").equals(SCHEMA)
