"""Receipt and recall handles: round trip, and garbled or forged ones are refused."""

import pytest

from rockmq.protocol import receipt, tokens

SECRET = b"s" * 32


def _handle(group_id: int, topic_id: int, checkpoint_id: int, entry: int, secret: bytes = SECRET) -> str:
    return receipt.handle(receipt.token(group_id, topic_id, checkpoint_id, secret), entry)


def test_receipt_round_trip():
    handle = _handle(1, 2, 2**40 + 7, 255)
    assert handle.isascii() and receipt.decode(handle, SECRET) == receipt.Receipt(1, 2, 2**40 + 7, 255)


def test_one_token_check_per_receive():
    """Handles of one receive share their token: checked once, each still naming its own entry."""
    verified: dict[str, receipt.Receipt] = {}
    assert [receipt.decode(_handle(1, 2, 3, i), SECRET, verified).entry for i in range(3)] == [0, 1, 2]
    assert list(verified.values()) == [receipt.Receipt(1, 2, 3, 0)]


@pytest.mark.parametrize("bad", ["", "not base64!!", "QUJD", "A" * 60, "A" * 36 + ".1", _handle(1, 2, 3, 4)[:-2],
                                 _handle(1, 2, 3, 4) + "123456789"])
def test_garbled_handles_are_refused(bad):
    with pytest.raises(ValueError):  # tokens.InvalidToken is one
        receipt.decode(bad, SECRET)


def test_forged_handle_is_refused():
    handle = _handle(1, 2, 3, 4, b"other secret")
    with pytest.raises(tokens.InvalidToken, match="not issued"):
        receipt.decode(handle, SECRET)


def test_tampered_handle_is_refused():
    handle = _handle(1, 2, 3, 4)
    tampered = handle[:5] + ("A" if handle[5] != "A" else "B") + handle[6:]
    with pytest.raises(tokens.InvalidToken):
        receipt.decode(tampered, SECRET)
