"""The broker's ACLs on disk: `acl.json` in the data directory, replaced whole on every change.

A change is written by whole_file.write_private (mode 0600, beside the file, fsync'ed, renamed
over it, the directory fsync'ed): the file is always the old ACLs or the new ones, never half of
either. One entry per (user, resource): granting a resource again replaces its entry (actions,
source IPs, decision).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rockmq.auth.acl import AclError, Entry, Resource, parse_actions, parse_decision, parse_networks
from rockmq.whole_file import write_private

FILE_NAME = "acl.json"
VERSION = 1

Acls = Mapping[str, tuple[Entry, ...]]  # user -> entries


class NoSuchEntry(AclError):
    """Revoking an entry the user does not have."""


class AclStoreError(Exception):
    """The ACL file cannot be read (one line saying why)."""


def entry_to_json(e: Entry) -> dict[str, object]:
    return {"resource": str(e.resource), "actions": sorted(a.value for a in e.actions),
            "source_ips": [str(n) for n in e.source_ips], "decision": e.decision.value}


def entry_from_json(d: Mapping[str, object]) -> Entry:
    ips = d.get("source_ips") or []
    actions = d.get("actions") or []
    if not isinstance(ips, list) or not isinstance(actions, list):
        raise AclError("actions and source_ips must be lists")
    return Entry(Resource.parse(str(d["resource"])), parse_actions([str(a) for a in actions]),
                 parse_networks(str(i) for i in ips), parse_decision(str(d.get("decision", "Allow"))))


def decode(raw: bytes, where: object) -> dict[str, tuple[Entry, ...]]:
    """Entries as `encoded` / the file holds them; `where` names them in the error."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise AclStoreError(f"cannot read {where}: {e}") from None
    try:
        return {user: tuple(entry_from_json(d) for d in entries) for user, entries in doc["acls"].items()}
    except (AclError, KeyError, TypeError, AttributeError) as e:
        raise AclStoreError(f"{where} is not a valid ACL file: {e}") from None


def _encode(acls: Acls) -> bytes:
    doc = {"version": VERSION, "acls": {u: [entry_to_json(e) for e in es] for u, es in sorted(acls.items()) if es}}
    return json.dumps(doc, indent=1).encode()


class AclStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.acls: dict[str, tuple[Entry, ...]] = self._load()
        self.generation = 0  # counts changes (a primary hands its replicas every one)

    def _load(self) -> dict[str, tuple[Entry, ...]]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise AclStoreError(f"cannot read {self.path}: {e}") from None
        return decode(raw, self.path)

    def _save(self, acls: dict[str, tuple[Entry, ...]]) -> None:
        write_private(self.path, _encode(acls))
        self.acls = {u: es for u, es in acls.items() if es}
        self.generation += 1

    def encoded(self) -> bytes:
        """Every entry as the file holds them: what a primary hands its replicas."""
        return _encode(self.acls)

    def adopt(self, acls: Acls) -> bool:
        """Take `acls` (another broker's, decoded: a replica's primary's) as every entry there is
        -> whether anything changed."""
        kept = {u: es for u, es in acls.items() if es}
        if kept == self.acls:
            return False
        self._save(kept)
        return True

    def grant(self, user: str, entry: Entry) -> None:
        """Give `user` this entry, replacing the one they had on the same resource."""
        kept = tuple(e for e in self.acls.get(user, ()) if e.resource != entry.resource)
        self._save({**self.acls, user: (*kept, entry)})

    def revoke(self, user: str, resource: Resource) -> Entry:
        """Take away `user`'s entry on `resource` -> it; NoSuchEntry when they have none."""
        entries = self.acls.get(user, ())
        gone = [e for e in entries if e.resource == resource]
        if not gone:
            raise NoSuchEntry(f"user {user!r} has no entry on {resource}")
        self._save({**self.acls, user: tuple(e for e in entries if e.resource != resource)})
        return gone[0]

    def forget(self, user: str) -> None:
        """Take away every entry of `user`."""
        self._save({u: es for u, es in self.acls.items() if u != user})
