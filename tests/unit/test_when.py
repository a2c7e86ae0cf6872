"""Delays and delivery times as people write them."""

from datetime import UTC, datetime

import pytest

from rockmq.when import instant_ms, parse_delay_ms, parse_instant_ms


@pytest.mark.parametrize("text,ms", [("1500ms", 1500), ("30s", 30_000), ("2h", 7_200_000), ("2.5m", 150_000),
                                     ("1d", 86_400_000), (" 0s ", 0), ("1.0005s", 1000)])
def test_delays(text, ms):
    assert parse_delay_ms(text) == ms


@pytest.mark.parametrize("text", ["", "10", "s", "-5s", "5 parsecs", "1e3ms", "5sec"])
def test_bad_delays(text):
    with pytest.raises(ValueError, match="invalid delay"):
        parse_delay_ms(text)


def test_instants_keep_milliseconds_and_zones():
    assert parse_instant_ms("2026-11-22T18:30:00.250Z") == int(datetime(2026, 11, 22, 18, 30, 0, 250_000, UTC).timestamp() * 1000)
    assert parse_instant_ms("2026-11-22T19:30:00.250+01:00") == parse_instant_ms("2026-11-22T18:30:00.250Z")
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_instant_ms("next tuesday")


@pytest.mark.parametrize("text", ["2026-11-23T12:00", "2026-11-23 12:00:00.250", "2026-11-23"])
def test_a_time_without_a_zone_is_refused_naming_the_fix(text):
    with pytest.raises(ValueError, match=r"no zone.*Z for UTC.*\+01:00"):
        parse_instant_ms(text)


def test_instant_ms_cuts_below_the_millisecond_and_refuses_naive_datetimes():
    assert instant_ms(datetime(1970, 1, 1, 0, 0, 0, 1999, UTC)) == 1
    assert instant_ms(datetime(1969, 12, 31, 23, 59, 59, 999_500, UTC)) == -1
    with pytest.raises(ValueError, match="no zone"):
        instant_ms(datetime(2026, 11, 23, 12, 0))
