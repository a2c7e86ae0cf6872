"""Receipt and recall handles: round trip, and garbled or forged ones are refused."""

import pytest

from rockmq.protocol import receipt, tokens

SECRET = b"s" * 32


def test_receipt_round_trip():
    r = receipt.Receipt(group_id=1, topic_id=2, queue_id=3, offset=4, attempt=2, version=77)
    handle = receipt.encode(r, SECRET)
    assert handle.isascii() and receipt.decode(handle, SECRET) == r


@pytest.mark.parametrize("bad", ["", "not base64!!", "QUJD", "A" * 60])
def test_garbled_handles_are_refused(bad):
    with pytest.raises(tokens.InvalidToken):
        receipt.decode(bad, SECRET)


def test_forged_handle_is_refused():
    handle = receipt.encode(receipt.Receipt(1, 2, 3, 4, 5, 1), b"other secret")
    with pytest.raises(tokens.InvalidToken, match="not issued"):
        receipt.decode(handle, SECRET)


def test_tampered_handle_is_refused():
    handle = receipt.encode(receipt.Receipt(1, 2, 3, 4, 5, 1), SECRET)
    tampered = handle[:5] + ("A" if handle[5] != "A" else "B") + handle[6:]
    with pytest.raises(tokens.InvalidToken):
        receipt.decode(tampered, SECRET)
