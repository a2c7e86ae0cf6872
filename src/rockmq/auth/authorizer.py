"""Authorization decisions with a bounded cache: (user, check, source IP) -> allowed.

Evaluating an ACL walks the user's entries; a busy producer asks the same question for every
request, so decisions are remembered and all forgotten when the ACLs change. Super users never
reach the cache.

What a client sends is not trusted to be small: a name is validated (its length and characters,
broker/metadata.py `check_name`) before it is evaluated, cached or named in a refusal, and the cache
is bounded in bytes as well as entries (bounded_cache.py). Only allowed decisions are cached:
a user with no grant could otherwise fill the cache with one denial per name it makes up (for
resources that need not exist), evicting the decisions of the users that work; a denial costs
one walk of the user's entries again instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from rockmq.auth.acl import Check, Kind, allowed
from rockmq.auth.acl_store import Acls
from rockmq.bounded_cache import BoundedCache
from rockmq.protocol.conventions import check_name

CACHE_CAPACITY = 65_536
CACHE_BYTES = 32 << 20
# What one decision keeps besides its strings' characters: the key tuple, the Check, the string
# objects' headers and the cache's two dict slots (measured at ~400 bytes with tracemalloc).
_ENTRY_BYTES = 512

Key = tuple[str, Check, str | None]


def _weight(key: Key, decision: bool) -> int:
    user, check, source_ip = key
    return _ENTRY_BYTES + len(user) + len(check.name) + len(source_ip or "")


def check_resource(check: Check) -> None:
    """Refuse (ILLEGAL_TOPIC, ILLEGAL_CONSUMER_GROUP) a check naming an illegal topic or group.
    An empty name is what listings check (any topic, any group): handlers refuse it elsewhere."""
    if check.name:
        check_name("topic" if check.kind is Kind.TOPIC else "group", check.name)


class Authorizer:
    def __init__(self, acls: Acls, capacity: int = CACHE_CAPACITY, max_bytes: int = CACHE_BYTES) -> None:
        self._acls = acls
        self._decisions: BoundedCache[Key, bool] = BoundedCache(capacity, max_bytes, _weight)

    def replace(self, acls: Acls) -> None:
        """The ACLs changed: decide from these, forgetting every remembered decision."""
        self._acls = acls
        self._decisions.clear()

    def allows(self, user: str, check: Check, source_ip: str | None) -> bool:
        """Whether the ACLs allow it; raises BrokerError for an illegal name. A cached decision's
        name was validated when it was cached: a hit validates nothing again."""
        key = (user, check, source_ip)
        if self._decisions.get(key):
            return True
        check_resource(check)
        decision = allowed(self._acls.get(user, ()), check, source_ip)
        if decision:
            self._decisions.put(key, decision)
        return decision

    def refused(self, user: str, super_user: bool, checks: Sequence[Check], source_ip: str | None) -> Check | None:
        """The first of `checks` the user may not do (None: all allowed). Every name is validated
        before a refusal: an illegal one is what the request is refused for, wherever it stands.
        Super users' names are validated by the handlers, as without authentication."""
        if super_user:
            return None
        for check in checks:
            if not self.allows(user, check, source_ip):
                for other in checks:
                    check_resource(other)
                return check
        return None
