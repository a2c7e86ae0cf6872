"""The name server's registry: of two registrations under one broker name, the higher primary
epoch holds it while alive (a superseded primary is not taken back and hears the epoch that won),
if it proves it: its proof hashes to the successor the live holder committed to (issue 32 §3)."""

from __future__ import annotations

from rockmq.broker.cluster.fencing import epoch_proof, proven, successor
from rockmq.namesrv.registry import Registry
from rockmq.protocol import namesrv

TIMEOUT_MS = 1_000
SECRET = b"the group's secret"


def _info(endpoint: str, epoch: int, secret: bytes = SECRET) -> namesrv.BrokerInfo:
    """A registration as a broker of the group holding `secret` makes it."""
    return namesrv.BrokerInfo(name="b1", endpoint=endpoint, epoch=epoch, epoch_proof=epoch_proof(secret, epoch),
                              successor=successor(secret, epoch))


def test_the_higher_epoch_holds_the_name_and_the_lower_hears_it():
    r = Registry(TIMEOUT_MS)
    assert r.register(_info("old:1", 0), 0).epoch == 0
    assert r.register(_info("new:1", 1), 100).epoch == 1
    held = r.register(_info("old:1", 0), 200)  # not taken: told the epoch that superseded it, with its proof
    assert held.epoch == 1 and proven(SECRET, 1, held.epoch_proof)
    assert [(b.endpoint, b.epoch) for b in r.brokers()] == [("new:1", 1)]
    assert not any(b.epoch_proof or b.successor for b in r.brokers()), "ListBrokers hands out proofs"


def test_an_equal_epoch_replaces_and_a_dead_holder_gives_way():
    r = Registry(TIMEOUT_MS)
    r.register(_info("a:1", 2), 0)
    assert r.register(_info("b:1", 2), 10).epoch == 2  # same epoch: the latest registration, as before epochs
    assert [b.endpoint for b in r.brokers()] == ["b:1"]
    assert r.register(_info("c:1", 0), 10 + TIMEOUT_MS + 1).epoch == 0  # b:1 went silent: the name is free again
    assert [b.endpoint for b in r.brokers()] == ["c:1"]


def test_a_higher_epoch_without_the_proof_changes_nothing():
    """A stranger's claims: no proof, another group's proof, two epochs up, or planting its own
    commitment at the holder's epoch first — the holder keeps the name and hears its own epoch."""
    r = Registry(TIMEOUT_MS)
    r.register(_info("primary:1", 0), 0)
    forged = [namesrv.BrokerInfo(name="b1", endpoint="127.0.0.1:1", epoch=10**6), _info("127.0.0.1:1", 1, b"other"),
              _info("127.0.0.1:1", 2)]
    for claim in forged:
        assert r.register(claim, 10).epoch == 0
    r.register(_info("127.0.0.1:1", 0, b"other"), 20)  # same epoch: routes move, the commitment stays the holder's
    assert r.register(_info("127.0.0.1:1", 1, b"other"), 30).epoch == 0
    assert r.register(_info("primary:1", 0), 40).epoch == 0  # the holder's next registration takes its routes back
    assert [(b.endpoint, b.epoch) for b in r.brokers()] == [("primary:1", 0)]
    assert r.register(_info("replica:1", 1), 50).epoch == 1  # its promoted replica still takes over


def test_unregister_drops_only_its_own_registration():
    """A draining broker leaves routes at once; a stale unregistration (another endpoint, or the
    epoch a promoted replica superseded) leaves the name's holder in place."""
    r = Registry(TIMEOUT_MS)
    r.register(_info("new:1", 1), 0)
    assert not r.unregister(namesrv.BrokerInfo(name="b1", endpoint="old:1", epoch=1))
    assert not r.unregister(namesrv.BrokerInfo(name="b1", endpoint="new:1", epoch=0))
    assert not r.unregister(namesrv.BrokerInfo(name="b2", endpoint="new:1", epoch=1))
    assert [b.endpoint for b in r.brokers()] == ["new:1"]
    assert r.unregister(namesrv.BrokerInfo(name="b1", endpoint="new:1", epoch=1))
    assert r.brokers() == []
