"""Who may read /metrics on the HTTP port with authentication on: on a broker, HTTP Basic with a
rockmq user's access key and secret, a super user or one granted Get on `Cluster`; on a name server,
which knows no users, the cluster's inner credentials. Refusals are audited as the gRPC port's are
(auth/audit.py); /healthz and /readyz are open (they reveal nothing)."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable

from rockmq.auth import audit
from rockmq.auth.access import AccessControl
from rockmq.auth.acl import Action, cluster_check
from rockmq.auth.users import User, Users

WHAT = "http/metrics"
_CHECK = cluster_check(Action.GET)
Refusal = tuple[int, str]  # the reply's status and one line
UNAUTHENTICATED: Refusal = (401, "authentication required: HTTP Basic with a rockmq user's access key and secret")


def basic_credentials(authorization: str) -> tuple[str, str] | None:
    """(user, secret) of a `Basic` Authorization header; None if it is none or does not parse."""
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, secret = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, secret) if sep else None


def _authenticated(find: Callable[[str], User | None], authorization: str, peer: str) -> User | None:
    """The user the header names, if its secret matches; else None, audited."""
    given = basic_credentials(authorization)
    user = find(given[0]) if given is not None else None
    if given is not None and user is not None and user.enabled and hmac.compare_digest(user.secret.encode(),
                                                                                     given[1].encode()):
        return user
    why = "no Basic credentials" if given is None else "unknown user, disabled user or wrong secret"
    audit.record("authentication-failed", f"{given[0] if given else ''} from {peer}", WHAT, why)
    return None


def admit(users: Users, access: AccessControl, authorization: str, peer: str) -> Refusal | None:
    """A broker's scrape: None, it may go on; else why not."""
    user = _authenticated(users.get, authorization, peer)
    if user is None:
        return UNAUTHENTICATED
    refused = access.authorizer.refused(user.name, user.super_user, (_CHECK,), peer or None)
    if refused is not None:
        message = f"user {user.name!r} may not {refused}"
        audit.record("authorization-refused", f"{user.name} from {peer}", WHAT, message)
        return 403, message
    return None


def admit_inner(inner: User, authorization: str, peer: str) -> Refusal | None:
    """A name server's scrape: the cluster's inner credentials only."""
    found = _authenticated(lambda name: inner if name == inner.name else None, authorization, peer)
    return None if found is not None else UNAUTHENTICATED
