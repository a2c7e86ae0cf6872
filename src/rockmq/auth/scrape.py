"""Who may read /metrics on the HTTP port with authentication on: HTTP Basic with a rockmq user's
access key and secret, a super user or one granted Get on `Cluster`. Refusals are audited as the
gRPC port's are (auth/audit.py); /healthz and /readyz are open (they reveal nothing)."""

from __future__ import annotations

import base64
import binascii
import hmac

from rockmq.auth import audit
from rockmq.auth.access import AccessControl
from rockmq.auth.acl import Action, cluster_check
from rockmq.auth.users import Users

WHAT = "http/metrics"
_CHECK = cluster_check(Action.GET)


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


def admit(users: Users, access: AccessControl, authorization: str, peer: str) -> tuple[int, str] | None:
    """May the scrape with this Authorization header from `peer` go on? None: yes; else its status
    and one line (the audit line says why)."""
    given = basic_credentials(authorization)
    user = users.get(given[0]) if given is not None else None
    if given is None or user is None or not user.enabled or not hmac.compare_digest(
            user.secret.encode(), given[1].encode()):
        why = "no Basic credentials" if given is None else "unknown user, disabled user or wrong secret"
        audit.record("authentication-failed", f"{given[0] if given else ''} from {peer}", WHAT, why)
        return 401, "authentication required: HTTP Basic with a rockmq user's access key and secret"
    refused = access.authorizer.refused(user.name, user.super_user, (_CHECK,), peer or None)
    if refused is not None:
        message = f"user {user.name!r} may not {refused}"
        audit.record("authorization-refused", f"{user.name} from {peer}", WHAT, message)
        return 403, message
    return None
