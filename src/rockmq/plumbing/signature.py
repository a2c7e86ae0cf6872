"""The RocketMQ 5 request signature, as the official clients compute it (pure, no I/O).

`authorization: MQv2-HMAC-SHA1 Credential=<access key>, SignedHeaders=x-mq-date-time, Signature=<hex>`,
the signature being hex(HMAC-SHA1(secret, the `x-mq-date-time` value)). Only the date is signed, so
a captured header can be replayed for any call while its date is accepted: within the clock-skew
window (`within_skew`), widened by every time zone's offset because the official Python client sends
its local time labelled Z. Only TLS keeps a header from being captured. docs/shared
security-notes.md records the clients' exact bytes; rockmq's own control-plane calls sign more
(inner_signature.py).
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import time

AUTHORIZATION_HEADER = "authorization"
DATE_HEADER = "x-mq-date-time"
ALGORITHM = "MQv2-HMAC-SHA1"
CREDENTIAL, SIGNED_HEADERS, SIGNATURE = "Credential", "SignedHeaders", "Signature"
DATE_FORMAT = "%Y%m%dT%H%M%SZ"
DATE_LENGTH = 16  # len("20261129T093000Z")
# Every UTC offset in use, in minutes east (the half and three-quarter hours included): what a client
# that labels local time as UTC can be off by, besides its clock's skew.
ZONE_OFFSETS_S = tuple(60 * m for m in (
    0, *(60 * h for h in range(-12, 15) if h), -570, -210, 210, 270, 330, 345, 390, 525, 570, 630, 765, 825))


class BadSignature(ValueError):
    """An `authorization` header that cannot be read; the message says why (never a secret)."""


def signature(secret: str, date: str) -> str:
    """hex(HMAC-SHA1(secret, date)), lowercase (the broker compares case-insensitively)."""
    return hmac.new(secret.encode(), date.encode(), hashlib.sha1).hexdigest()


def authorization(access_key: str, secret: str, date: str) -> str:
    """The `authorization` header's value signing `date` as `access_key`."""
    return f"{ALGORITHM} {CREDENTIAL}={access_key}, {SIGNED_HEADERS}={DATE_HEADER}, {SIGNATURE}={signature(secret, date)}"


def date_now(now_s: float | None = None) -> str:
    """The `x-mq-date-time` value for now, in UTC (as the Node client sends it)."""
    return time.strftime(DATE_FORMAT, time.gmtime(time.time() if now_s is None else now_s))


def date_seconds(date: str) -> int | None:
    """An `x-mq-date-time` value as seconds since the epoch (None: not a date of DATE_FORMAT)."""
    if len(date) != DATE_LENGTH:
        return None
    try:
        return calendar.timegm(time.strptime(date, DATE_FORMAT))
    except ValueError:
        return None


def within_skew(signed_s: float, now_s: float, skew_s: float) -> bool:
    """Whether a date signed at `signed_s` is within `skew_s` of now, or of now in some time zone."""
    ahead = signed_s - now_s
    return -skew_s <= ahead <= skew_s or any(abs(ahead - zone) <= skew_s for zone in ZONE_OFFSETS_S)


def parse(value: str) -> tuple[str, bytes]:
    """An `authorization` value -> (user, signature digest), read as Apache's proxy reads it:
    the algorithm and SignedHeaders are not checked; the user is Credential's first `/` part (Go
    sends `ak//Rocketmq`); the hex may be either case. An empty user is returned as "" (the
    Python client's `Credentials()` signs with no key: the same as no header)."""
    _, sep, rest = value.strip().partition(" ")
    if not sep:
        raise BadSignature("the authorization header has no credential")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        key, eq, val = part.strip().partition("=")
        if not eq:
            raise BadSignature(f"the authorization header's part {key[:40]!r} has no '='")
        fields[key.strip()] = val.strip()
    user = fields.get(CREDENTIAL, "").split("/", 1)[0]
    if not user:
        return "", b""
    try:
        digest = bytes.fromhex(fields.get(SIGNATURE, ""))
    except ValueError:
        raise BadSignature(f"the signature of user {user!r} is not hexadecimal") from None
    return user, digest


def verify(secret: str, date: str, digest: bytes) -> bool:
    """Whether `digest` is HMAC-SHA1(secret, date), compared in constant time."""
    return hmac.compare_digest(hmac.new(secret.encode(), date.encode(), hashlib.sha1).digest(), digest)
