"""Authorization decisions with a bounded cache: (user, check, source IP) -> allowed.

Evaluating an ACL walks the user's entries; a busy producer asks the same question for every
request, so decisions are remembered (at most `capacity`, the oldest forgotten first) and all
forgotten when the ACLs change. Super users never reach the cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from rockmq.auth.acl import Check, allowed
from rockmq.auth.acl_store import Acls

CACHE_CAPACITY = 65_536


class Authorizer:
    def __init__(self, acls: Acls, capacity: int = CACHE_CAPACITY) -> None:
        self._acls = acls
        self._capacity = capacity
        self._decisions: dict[tuple[str, Check, str | None], bool] = {}

    def replace(self, acls: Acls) -> None:
        """The ACLs changed: decide from these, forgetting every remembered decision."""
        self._acls = acls
        self._decisions = {}

    def allows(self, user: str, check: Check, source_ip: str | None) -> bool:
        key = (user, check, source_ip)
        decision = self._decisions.get(key)
        if decision is None:
            decision = allowed(self._acls.get(user, ()), check, source_ip)
            if len(self._decisions) >= self._capacity:
                del self._decisions[next(iter(self._decisions))]
            self._decisions[key] = decision
        return decision

    def refused(self, user: str, super_user: bool, checks: Iterable[Check], source_ip: str | None) -> Check | None:
        """The first of `checks` the user may not do (None: all allowed)."""
        if super_user:
            return None
        for check in checks:
            if not self.allows(user, check, source_ip):
                return check
        return None
