"""The broker's users (ACL 2.0's model): name, secret, super or normal, enabled or disabled.

Kept in `users.json` under the data directory (mode 0600, replaced whole: private_file.py). The
secret is stored as given, because the broker must compute HMAC-SHA1 with it to check a
signature. `generation` counts changes, so caches of verified signatures know when to forget.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rockmq.auth.private_file import read_private, write_private

FILE_NAME = "users.json"
NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")  # no '/', ',' or '=': a name must survive the authorization header


class UserError(ValueError):
    """A user change that cannot be made; the message says why (never a secret)."""


class NoSuchUser(UserError):
    pass


@dataclass(frozen=True, slots=True)
class User:
    name: str
    secret: str
    super_user: bool = False
    enabled: bool = True

    def __repr__(self) -> str:  # never the secret
        return f"User({self.name!r}, super_user={self.super_user}, enabled={self.enabled})"


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UserError(f"bad user name {name[:80]!r}: 1 to 64 letters, digits, '_', '.', '@' or '-'")
    return name


def check_secret(secret: str) -> str:
    if not secret or len(secret) > 256 or any(c in secret for c in "\r\n\0"):
        raise UserError("a secret must be 1 to 256 characters, without line breaks")
    return secret


class Users:
    """The users of one broker, loaded at start, written through on every change."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.generation = 0
        raw = read_private(self.path)
        try:
            loaded = json.loads(raw) if raw is not None else []
            self._users = {u["name"]: User(**u) for u in loaded}
        except (ValueError, TypeError, KeyError) as e:
            raise UserError(f"cannot read {self.path}: {e}") from None

    def get(self, name: str) -> User | None:
        return self._users.get(name)

    def __len__(self) -> int:
        return len(self._users)

    def all(self) -> list[User]:
        return sorted(self._users.values(), key=lambda u: u.name)

    def create(self, name: str, secret: str, super_user: bool = False) -> User:
        if check_name(name) in self._users:
            raise UserError(f"user {name!r} exists")
        user = User(name, check_secret(secret), super_user)
        self._save({**self._users, name: user})
        return user

    def update(self, name: str, secret: str | None = None, enabled: bool | None = None,
               super_user: bool | None = None) -> User:
        old = self._users.get(name)
        if old is None:
            raise NoSuchUser(f"no user {name!r}")
        user = replace(old, secret=old.secret if secret is None else check_secret(secret),
                       enabled=old.enabled if enabled is None else enabled,
                       super_user=old.super_user if super_user is None else super_user)
        self._save({**self._users, name: user})
        return user

    def delete(self, name: str) -> None:
        if name not in self._users:
            raise NoSuchUser(f"no user {name!r}")
        self._save({n: u for n, u in self._users.items() if n != name})

    def _save(self, users: dict[str, User]) -> None:
        """Written to disk first: a change is applied only once it is durable."""
        write_private(self.path, json.dumps([asdict(u) for u in users.values()], indent=1).encode())
        self._users = users
        self.generation += 1
