"""Fetch replies written and read without protobuf objects agree with protobuf's own encoding."""

from __future__ import annotations

from array import array

import pytest

from rockmq.protocol import batch, pb
from rockmq.protocol.fetch import encode_fetch_response, parse_fetch_response


def _offsets(records: list[bytes]) -> bytes:
    ends = [0]
    for r in records:
        ends.append(ends[-1] + len(r))
    return array("i", ends).tobytes()


@pytest.mark.parametrize("records", [[], [b"a"], [b"x" * 300, b"", b"yz" * 5000]])
def test_encoded_reply_is_the_protobuf_reply(records):
    status = pb.Status(code=pb.OK, message="OK")
    raw = encode_fetch_response(status, 1 << 40, records, 7, -1 if not records else 1 << 41)
    expected = batch.FetchResponse(status=status, first_offset=1 << 40, count=len(records), records=b"".join(records),
                                   offsets=_offsets(records), min_offset=7, max_offset=-1 if not records else 1 << 41)
    assert batch.FetchResponse.FromString(raw) == expected
    assert raw == expected.SerializeToString()  # the same bytes, field for field


def test_parse_reads_what_protobuf_wrote_and_skips_unknown_fields():
    reply = batch.FetchResponse(status=pb.Status(code=pb.NOT_FOUND, message="gone"), first_offset=-5, count=2,
                                records=b"abcd", offsets=_offsets([b"ab", b"cd"]), min_offset=3, max_offset=9)
    unknown = bytes([(15 << 3) | 0, 1, (14 << 3) | 5, 0, 0, 0, 0, (13 << 3) | 1]) + bytes(8)
    got = parse_fetch_response(reply.SerializeToString() + unknown)
    assert (got.code, got.message, got.first_offset, got.count, got.min_offset, got.max_offset) == \
        (pb.NOT_FOUND, "gone", -5, 2, 3, 9)
    assert bytes(got.records) == b"abcd" and list(array("i", bytes(got.offsets))) == [0, 2, 4]


def test_parse_refuses_what_is_not_a_reply():
    with pytest.raises(ValueError, match="wire type"):
        parse_fetch_response(bytes([(1 << 3) | 3]))
