"""auth/principals.py: a primary's users and ACLs, copied whole, become a replica's own (written to its
private files, its caches forgetting what they knew); the same copy again changes nothing, and a copy
that cannot be read leaves the replica as it was."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from test_acl_eval import entry

from rockmq.auth.access import AccessControl
from rockmq.auth.acl import Action, topic_check
from rockmq.auth.acl_store import AclStoreError
from rockmq.auth.identity import Identity
from rockmq.auth.principals import Principals
from rockmq.auth.users import UserError, Users

ROOT = Identity("root", super_user=True)


def _broker(path: Path) -> Principals:
    path.mkdir()
    return Principals(Users(path), AccessControl(path))


def test_a_copy_becomes_the_replicas_own(tmp_path: Path) -> None:
    primary, replica = _broker(tmp_path / "primary"), _broker(tmp_path / "replica")
    primary.users.create("root", "root-secret", super_user=True)
    primary.users.create("reader", "reader-secret")
    primary.access.grant(ROOT, "reader", entry("Topic:*", "List"))
    replica.users.create("standby", "standby-secret", super_user=True)  # its own first super user gives way
    before = replica.version

    assert replica.adopt(primary.copy())
    assert replica.version != before
    assert [(u.name, u.secret, u.super_user) for u in replica.users.all()] == [
        ("reader", "reader-secret", False), ("root", "root-secret", True)]
    assert replica.access.entries() == [("reader", entry("Topic:*", "List"))]
    assert replica.access.authorizer.refused("reader", False, [topic_check("t", Action.LIST)], None) is None
    again = Principals(Users(tmp_path / "replica"), AccessControl(tmp_path / "replica"))  # on disk, private
    assert again.copy() == primary.copy()
    for name in ("users.json", "acl.json"):
        assert stat.S_IMODE((tmp_path / "replica" / name).stat().st_mode) == 0o600

    version = replica.version
    assert not replica.adopt(primary.copy())  # nothing new: nothing written
    assert replica.version == version


def test_a_copy_that_cannot_be_read_changes_nothing(tmp_path: Path) -> None:
    primary, replica = _broker(tmp_path / "primary"), _broker(tmp_path / "replica")
    replica.users.create("standby", "standby-secret", super_user=True)
    bad = primary.copy()
    bad.users = b"not json"
    with pytest.raises(UserError):
        replica.adopt(bad)
    bad = primary.copy()
    bad.acls = b'{"acls": {"a": [{"resource": "Nope", "actions": ["Pub"]}]}}'
    with pytest.raises(AclStoreError):
        replica.adopt(bad)
    assert [u.name for u in replica.users.all()] == ["standby"]

