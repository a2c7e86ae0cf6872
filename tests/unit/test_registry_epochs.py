"""The name server's registry: of two registrations under one broker name, the higher primary
epoch holds it while alive (a superseded primary is not taken back and hears the epoch that won)."""

from __future__ import annotations

from rockmq.namesrv.registry import Registry
from rockmq.protocol import namesrv

TIMEOUT_MS = 1_000


def _info(endpoint: str, epoch: int) -> namesrv.BrokerInfo:
    return namesrv.BrokerInfo(name="b1", endpoint=endpoint, epoch=epoch)


def test_the_higher_epoch_holds_the_name_and_the_lower_hears_it():
    r = Registry(TIMEOUT_MS)
    assert r.register(_info("old:1", 0), 0) == 0
    assert r.register(_info("new:1", 1), 100) == 1
    assert r.register(_info("old:1", 0), 200) == 1  # not taken: told the epoch that superseded it
    assert [(b.endpoint, b.epoch) for b in r.brokers()] == [("new:1", 1)]


def test_an_equal_epoch_replaces_and_a_dead_holder_gives_way():
    r = Registry(TIMEOUT_MS)
    r.register(_info("a:1", 2), 0)
    assert r.register(_info("b:1", 2), 10) == 2  # same epoch: the latest registration, as before epochs
    assert [b.endpoint for b in r.brokers()] == ["b:1"]
    assert r.register(_info("c:1", 0), 10 + TIMEOUT_MS + 1) == 0  # b:1 went silent: the name is free again
    assert [b.endpoint for b in r.brokers()] == ["c:1"]
