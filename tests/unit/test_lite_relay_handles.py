"""The relay's wrapped receipt handles (broker/cluster/lite_relay.py): they name their broker, come
apart again, and can never be taken for a local handle, nor a local handle for one."""

from __future__ import annotations

from rockmq.broker.cluster.lite_relay import MARK, unwrap, wrap
from rockmq.protocol import receipt


def test_a_wrapped_handle_names_its_broker_and_comes_apart():
    local = receipt.handle(receipt.token(7, 9, 123456, b"k" * 32), 3)
    wrapped = wrap("broker-a-1", local)
    assert wrapped.startswith(MARK) and unwrap(wrapped) == ("broker-a-1", local)
    assert unwrap(local) is None  # a local handle is never taken for a wrapped one


def test_local_handles_never_begin_with_the_mark():
    """A token is urlsafe base64 of a body that begins with its version: never the mark."""
    for ids in ((0, 0, 0), (2**32 - 1, 2**32 - 1, 2**64 - 1), (1, 2, 3)):
        assert receipt.handle(receipt.token(*ids, b"secret"), 0)[0] != MARK


def test_a_wrapping_without_a_broker_or_a_handle_is_none():
    for bad in ("~", "~~", "~b~", "~~h", "~b", "x~b~h"):
        assert unwrap(bad) is None, bad
