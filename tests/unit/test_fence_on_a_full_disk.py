"""A primary that hears of a higher primary epoch while its disk is full is fenced all the same: the
durable mark (`repl/fenced`) could not be written, and `Fence.learn` raised — the registration loop
that heard it ended, and once space returned the superseded primary took writes again (split brain)."""

from __future__ import annotations

import pytest

from rockmq.broker.cluster.fencing import Fence
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store
from rockmq.store.disk_space import DiskFull


def test_a_full_disk_does_not_keep_a_primary_from_being_fenced(tmp_path):
    store = Store(tmp_path / "data")
    try:
        fence = Fence(store, "b1")
        fenced: list[bool] = []
        fence.on_fenced = lambda: fenced.append(True)
        store.refuse_writes(lambda: DiskFull("disk full"))  # what a store out of room answers every write
        assert fence.learn(3, "name server") is True
        assert fence.fenced and fenced == [True]
        with pytest.raises(BrokerError) as refused:
            batch = store.batch()
            batch.put("meta", b"probe", b"1")
            store.write(batch)
        assert refused.value.code == pb.HA_NOT_AVAILABLE
    finally:
        store.close()
