"""How rockmq's own control-plane calls are signed, and how an endpoint proves it holds the
cluster's inner credentials (docs/security.md, "The control plane"). Pure: no I/O, no clock (callers pass `now`).

The official clients' signature covers the date only, so a captured header signs any call for as
long as its date is accepted. Brokers and name servers sign their own calls with the inner
credentials over more: HMAC-SHA1(secret, date "\\n" method "\\n" nonce), the nonce fresh for each
call and the date within INNER_WINDOW_S of the receiver's clock (they sign UTC). The receiver takes
each nonce once (nonces.py): a captured control-plane header opens no other method, works no second
time, and not later. The `authorization` header keeps the official layout; its SignedHeaders names
what is covered.

Before a broker sends such a call, or a secret, the endpoint proves it holds the same credentials
(the `Inner.Prove` handshake): HMAC-SHA1(secret, PROOF_CONTEXT + a fresh challenge). Its prefix
keeps that answer from ever equalling a request signature (a date or a date and a method).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from rockmq.plumbing.signature import ALGORITHM, CREDENTIAL, DATE_HEADER, SIGNATURE, SIGNED_HEADERS

NONCE_HEADER = "x-rockmq-nonce"
COVERED = f"{DATE_HEADER};:path;{NONCE_HEADER}"  # the SignedHeaders of a control-plane call
INNER_WINDOW_S = 30  # how far a control-plane call's date may be from the receiver's clock (both sides UTC)
NONCE = re.compile(r"[0-9a-f]{32}")
PROOF_CONTEXT = b"rockmq-inner-proof\n"
CHALLENGE_MIN, CHALLENGE_MAX = 16, 64  # bytes of a Prove challenge


def new_nonce() -> str:
    """A fresh nonce: 128 random bits as lowercase hex."""
    return secrets.token_hex(16)


def call_digest(secret: str, date: str, method: str, nonce: str) -> bytes:
    """HMAC-SHA1 over what a control-plane call signs: its date, its method path, its nonce."""
    return hmac.new(secret.encode(), f"{date}\n{method}\n{nonce}".encode(), hashlib.sha1).digest()


def authorization(access_key: str, secret: str, date: str, method: str, nonce: str) -> str:
    """The `authorization` header of one control-plane call."""
    return (f"{ALGORITHM} {CREDENTIAL}={access_key}, {SIGNED_HEADERS}={COVERED}, "
            f"{SIGNATURE}={call_digest(secret, date, method, nonce).hex()}")


def verify_call(secret: str, date: str, method: str, nonce: str, digest: bytes) -> bool:
    """Whether `digest` signs this call (constant time)."""
    return hmac.compare_digest(call_digest(secret, date, method, nonce), digest)


def proof(secret: str, challenge: bytes) -> bytes:
    """The answer to a Prove challenge."""
    return hmac.new(secret.encode(), PROOF_CONTEXT + challenge, hashlib.sha1).digest()


def proves(secret: str, challenge: bytes, answer: bytes) -> bool:
    """Whether `answer` proves the holder of `secret` answered `challenge` (constant time)."""
    return hmac.compare_digest(proof(secret, challenge), answer)
