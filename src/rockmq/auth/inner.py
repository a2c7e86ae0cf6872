"""The cluster's inner credentials (docs/security.md, "The control plane"): the key pair brokers and name servers of one
cluster share (`--inner-access-key` / `--inner-secret-key`, settings `inner_access_key` /
`inner_secret_key`).

With authentication on, the control plane answers only requests signed with it: replication
(`Follow` hands out the broker's receipt-handle secret and its users) and every name-server call
(`Register` would let anyone redirect clients' traffic). A broker signs its own calls — to name
servers, to its primary, to other brokers' admin services — over the method, the date and a
single-use nonce (inner_signature.py), and sends them only to endpoints that proved
they hold the same credentials (`Prover` here answers that handshake; inner_calls.py asks it). The
seam authenticates such a call as the inner user: a super user marked `inner` on its Identity.
"""

from __future__ import annotations

from typing import Any

import grpc

from rockmq.auth.authenticate import Authenticator, InnerAuthenticator, NoUsers, UserLookup
from rockmq.auth.inner_signature import CHALLENGE_MAX, CHALLENGE_MIN, proof
from rockmq.auth.permissions import OPEN_METHODS
from rockmq.auth.seam import Authorize, AuthSeam
from rockmq.auth.users import User
from rockmq.config import Settings
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import inner, inner_grpc, namesrv, replication


def _methods(module: object, service: str) -> frozenset[str]:
    """Every method of one of rockmq's services, as the seam names them (package.Service/Method)."""
    descriptor = module.DESCRIPTOR.services_by_name[service]  # type: ignore[attr-defined]
    return frozenset(f"{descriptor.full_name}/{m.name}" for m in descriptor.methods)


REPLICATION_METHODS = _methods(replication, "Replication")
NAMESRV_METHODS = _methods(namesrv, "NameServer")
INNER_ONLY = REPLICATION_METHODS | NAMESRV_METHODS  # a broker serves no name-server method; listed for one table
# The handshake (anyone may ask, the answer proves the server) and what the table opens to anyone.
OPEN = _methods(inner, "Inner") | OPEN_METHODS


def inner_credentials(settings: Settings) -> Credentials | None:
    """What this broker signs its own calls with (None: no inner credentials, calls unsigned)."""
    return Credentials(settings.inner_access_key, settings.inner_secret_key) if settings.inner_access_key else None


def inner_user(settings: Settings) -> User | None:
    """The inner credentials as the seam authenticates them."""
    if not settings.inner_access_key:
        return None
    return User(settings.inner_access_key, settings.inner_secret_key, super_user=True)


class Prover(inner_grpc.InnerServicer):
    """Answers `Inner.Prove`: this server holds the inner credentials (a broker's or name server's)."""

    def __init__(self, inner_user: User | None) -> None:
        self.inner_user = inner_user

    async def Prove(self, request: inner.ProveRequest, context: grpc.aio.ServicerContext[Any, Any]) -> inner.ProveResponse:
        if self.inner_user is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this server has no inner credentials "
                                "(--inner-access-key / --inner-secret-key)")
        if not CHALLENGE_MIN <= len(request.challenge) <= CHALLENGE_MAX:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"a challenge is {CHALLENGE_MIN} to {CHALLENGE_MAX} bytes, not {len(request.challenge)}")
        return inner.ProveResponse(proof=proof(self.inner_user.secret, request.challenge))


def inner_seam(inner_user: User | None, max_skew_s: float, users: UserLookup | None = None,
               super_only: frozenset[str] = frozenset(), authorize: Authorize | None = None) -> AuthSeam:
    """A seam whose control-plane methods need the inner credentials: a broker's (with its `users`
    and their grants, `authorize`; without inner credentials nobody may follow it) or a name
    server's (the inner credentials alone: every call to it is a broker's)."""
    return AuthSeam(Authenticator(users if users is not None else NoUsers(), max_skew_s), authorize,
                    super_only=super_only, inner=InnerAuthenticator(inner_user) if inner_user is not None else None,
                    inner_methods=INNER_ONLY, open_methods=OPEN)
