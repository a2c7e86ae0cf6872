"""The broker's users (ACL 2.0's model): name, secret, super or normal, enabled or disabled.

Kept in `users.json` under the data directory (mode 0600, replaced whole: whole_file.py). The
secret is stored as given, because the broker must compute HMAC-SHA1 with it to check a
signature. `generation` counts changes, so caches of verified signatures know when to forget.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rockmq.plumbing.credentials import USER_NAME
from rockmq.whole_file import read_private, write_private

FILE_NAME = "users.json"


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
    if not USER_NAME.fullmatch(name):
        raise UserError(f"bad user name {name[:80]!r}: 1 to 64 letters, digits, '_', '.', '@' or '-'")
    return name


def check_secret(secret: str) -> str:
    if not secret or len(secret) > 256 or any(c in secret for c in "\r\n\0"):
        raise UserError("a secret must be 1 to 256 characters, without line breaks")
    return secret


def decode(raw: bytes, where: object) -> dict[str, User]:
    """Users as `encoded` / the file holds them; `where` names them in the error."""
    try:
        return {u["name"]: User(**u) for u in json.loads(raw)}
    except (ValueError, TypeError, KeyError) as e:
        raise UserError(f"cannot read {where}: {e}") from None


def _encode(users: dict[str, User]) -> bytes:
    return json.dumps([asdict(u) for u in users.values()], indent=1).encode()


class Users:
    """The users of one broker, loaded at start, written through on every change."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.generation = 0
        raw = read_private(self.path)
        self._users = decode(raw, self.path) if raw is not None else {}

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

    def encoded(self) -> bytes:
        """Every user, secrets included, as the file holds them: what a primary hands its replicas."""
        return _encode(self._users)

    def adopt(self, users: dict[str, User]) -> bool:
        """Take `users` (another broker's, decoded: a replica's primary's) as every user there is
        -> whether anything changed."""
        if users == self._users:
            return False
        self._save(users)
        return True

    def _save(self, users: dict[str, User]) -> None:
        """Written to disk first: a change is applied only once it is durable."""
        write_private(self.path, _encode(users))
        self._users = users
        self.generation += 1
