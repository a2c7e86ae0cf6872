"""Receipt and recall handles: round trip, and garbled or forged ones are refused."""

import pytest

from rockmq.protocol import receipt, tokens

SECRET = b"s" * 32


def _handle(group_id: int, topic_id: int, checkpoint_id: int, entry: int, secret: bytes = SECRET) -> str:
    return receipt.handle(receipt.token(group_id, topic_id, checkpoint_id, secret), entry)


def test_receipt_round_trip():
    handle = _handle(1, 2, 2**40 + 7, 255)
    assert handle.isascii() and receipt.decode(handle, SECRET) == receipt.Receipt(1, 2, 2**40 + 7, 255)


def test_handles_of_one_receive_share_their_token():
    """An ack of many handles of one receive checks the token once; each names its own entry."""
    split = [receipt.split(_handle(1, 2, 3, i)) for i in range(3)]
    assert len({token for token, _ in split}) == 1 and [entry for _, entry in split] == [0, 1, 2]
    assert receipt.open_token(split[0][0], SECRET) == (1, 2, 3)


@pytest.mark.parametrize("bad", ["", "not base64!!", "QUJD", "A" * 60, "A" * 36 + ".1", _handle(1, 2, 3, 4)[:-2],
                                 _handle(1, 2, 3, 4) + "123456789", _handle(1, 2, 3, 4)[:-1] + "-1"])
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
