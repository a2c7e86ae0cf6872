"""The cluster's inner credentials (issue 19 §4): the key pair brokers and name servers of one
cluster share (`--inner-access-key` / `--inner-secret-key`, settings `inner_access_key` /
`inner_secret_key`).

With authentication on, the control plane answers only requests signed with it: replication
(`Follow` hands out the broker's receipt-handle secret) and every name-server call (`Register`
would let anyone redirect clients' traffic). A broker signs its own outgoing calls with it — to
name servers, to its primary, to other brokers' admin services — exactly as a client signs with a
user's key (auth/credentials.py), so the seam authenticates it as one more user: a super user
(admin fan-out passes every authorization) marked `inner` on its Identity.
"""

from __future__ import annotations

from rockmq.auth.authenticate import Authenticator, UserLookup
from rockmq.auth.credentials import Credentials
from rockmq.auth.seam import Authorize, AuthSeam
from rockmq.auth.users import User
from rockmq.config import Settings
from rockmq.protocol import namesrv, replication
from rockmq.protocol.channels import Metadata


def _methods(module: object, service: str) -> frozenset[str]:
    """Every method of one of rockmq's services, as the seam names them (package.Service/Method)."""
    descriptor = module.DESCRIPTOR.services_by_name[service]  # type: ignore[attr-defined]
    return frozenset(f"{descriptor.full_name}/{m.name}" for m in descriptor.methods)


REPLICATION_METHODS = _methods(replication, "Replication")
NAMESRV_METHODS = _methods(namesrv, "NameServer")
INNER_ONLY = REPLICATION_METHODS | NAMESRV_METHODS  # a broker serves no name-server method; listed for one table


def inner_credentials(settings: Settings) -> Credentials | None:
    """What this broker signs its own calls with (None: no inner credentials, calls unsigned)."""
    return Credentials(settings.inner_access_key, settings.inner_secret_key) if settings.inner_access_key else None


def signed(credentials: Credentials | None) -> Metadata | None:
    """The metadata of one of a broker's own calls: its inner credentials' headers (None: unsigned)."""
    return credentials.headers() if credentials is not None else None


def inner_user(settings: Settings) -> User | None:
    """The inner credentials as the seam authenticates them."""
    if not settings.inner_access_key:
        return None
    return User(settings.inner_access_key, settings.inner_secret_key, super_user=True)


class WithInner:
    """A UserLookup: the inner user (if any) beside `users` (it shadows a user of the same name)."""

    def __init__(self, inner: User | None, users: UserLookup | None = None) -> None:
        self.inner = inner
        self.users = users

    @property
    def generation(self) -> int:
        return self.users.generation if self.users is not None else 0

    def get(self, name: str) -> User | None:
        if self.inner is not None and name == self.inner.name:
            return self.inner
        return self.users.get(name) if self.users is not None else None


def inner_seam(inner: User | None, users: UserLookup | None = None, super_only: frozenset[str] = frozenset(),
               authorize: Authorize | None = None) -> AuthSeam:
    """A seam whose control-plane methods need the inner credentials: a broker's (with its `users`
    and their grants, `authorize`; without inner credentials nobody may follow it) or a name
    server's (the inner credentials alone: every call to it is a broker's)."""
    return AuthSeam(Authenticator(WithInner(inner, users)), authorize, super_only=super_only,
                    inner_user=inner.name if inner is not None else "", inner_methods=INNER_ONLY)
