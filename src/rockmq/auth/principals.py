"""A broker's users and ACLs as one copy, secrets included, that a primary hands its replicas
(broker/cluster/replication.py): first on every Follow stream, so a replica that was down catches
up, and again after every change. A primary sends it only with --auth, where Follow answers the
cluster's inner credentials alone (auth/inner.py), over TLS when the brokers serve it: the secrets
travel only between the cluster's own servers. A replica keeps the copy as its own users.json and
acl.json, replacing whatever it had (its --admin-user too): a user signs in on it to read, and still
does once it is promoted."""

from __future__ import annotations

from rockmq.auth.access import AccessControl
from rockmq.auth.acl_store import decode as decode_acls
from rockmq.auth.users import Users
from rockmq.auth.users import decode as decode_users
from rockmq.protocol import replication


class Principals:
    def __init__(self, users: Users, access: AccessControl) -> None:
        self.users = users
        self.access = access

    @property
    def version(self) -> tuple[int, int]:
        """Moves with every change of either (a stream then sends a new copy)."""
        return self.users.generation, self.access.store.generation

    def copy(self) -> replication.Principals:
        return replication.Principals(users=self.users.encoded(), acls=self.access.store.encoded())

    def adopt(self, copy: replication.Principals) -> bool:
        """Take the primary's `copy` as this broker's users and ACLs -> whether anything changed. Both
        are read before either is written: a copy that cannot be read changes nothing."""
        users = decode_users(copy.users, "the primary's users")
        acls = decode_acls(copy.acls, "the primary's ACLs")
        changed = self.users.adopt(users)
        return self.access.adopt(acls) or changed
