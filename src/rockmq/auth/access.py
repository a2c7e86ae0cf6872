"""Authorization as a broker serves it: its ACLs (acl_store), the cached decisions (authorizer),
the request table (permissions), and the changes the admin calls make (audited).

`authorize` is the seam's hook (seam.py): it runs once per request, after authentication, and
raises `forbidden(...)` naming the user, the resource and the action. Four checks are asked by
handlers instead, reading the request's identity from the seam: Telemetry's settings as they come
(`check_settings`), SendMessage's topics once its handler has read the messages (`check_sends`:
one parse of the hot path's bytes), PublishStaged's on the topics of the chunks it names
(`check_publish_staged`), and auto-creating a topic where it would be created
(`may_create`). None of this runs with authentication off.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rockmq.auth import audit
from rockmq.auth.acl import Check, Entry, Resource
from rockmq.auth.acl_store import Acls, AclStore
from rockmq.auth.authorizer import Authorizer
from rockmq.auth.identity import Identity
from rockmq.auth.permissions import (
    BATCH,
    MESSAGING,
    SESSION_GRANT,
    Who,
    create_check,
    publishing,
    rule,
    telemetry_checks,
)
from rockmq.auth.seam import Refused, current_identity, forbidden, super_users_only
from rockmq.plumbing.unparsed import UNPARSED
from rockmq.protocol import pb
from rockmq.protocol.conventions import DLQ_PREFIX, RETRY_PREFIX
from rockmq.protocol.errors import BrokerError


class AccessControl:
    def __init__(self, data_dir: Path) -> None:
        self.store = AclStore(data_dir)
        self.authorizer = Authorizer(self.store.acls)

    # --- decisions -----------------------------------------------------------------------------

    def authorize(self, who: Identity, service: str, method: str, request: Any) -> None:
        """The seam's hook: may `who` make this request? (None for a stream of requests: they are
        checked as they come.)"""
        r = rule(f"{service}/{method}")
        if r.who is not Who.USER:  # super users only; the inner credentials are super (control)
            super_users_only(who, service, method, request)
        elif r.checks is not None and request is not None and request is not UNPARSED:  # UNPARSED: refused next
            self._check(who, r.checks(request), method)

    def _check(self, who: Identity, checks: Sequence[Check], method: str) -> None:
        """Refuse what `who` may not do; an illegal name is refused as such (ILLEGAL_TOPIC,
        ILLEGAL_CONSUMER_GROUP) before it is authorized, cached or logged."""
        try:
            refused = self.authorizer.refused(who.user, who.super_user, checks, who.source_ip or None)
        except BrokerError as e:
            raise Refused(e.code, e.message) from None
        if refused is not None:
            raise forbidden(f"user {who.user!r} may not {refused} ({method})")

    def _check_in_handler(self, checks: Sequence[Check], method: str, service: str = MESSAGING) -> None:
        """A check a handler asks (the seam is past): of the request's identity, audited here."""
        who = current_identity()
        if who is None:  # auth off, or the broker acting by itself
            return
        try:
            self._check(who, checks, method)
        except Refused as e:
            audit.record("authorization-refused", str(who), f"{service}/{method}", e.message)
            raise

    def check_settings(self, settings: pb.Settings) -> None:
        """A Telemetry settings command: its publishing topics, or its group and subscribed topics.
        Settings naming none would make a session using no grant: refused (docs/security.md)."""
        checks = telemetry_checks(settings)
        who = current_identity()
        if who is not None and not checks:
            refused = forbidden(f"user {who.user!r} may not make a session with settings naming no topic or group: "
                                f"{SESSION_GRANT}")
            audit.record("authorization-refused", str(who), f"{MESSAGING}/Telemetry", refused.message)
            raise refused
        self._check_in_handler(checks, "Telemetry")

    def check_sends(self, topics: Iterable[str]) -> None:
        """SendMessage's messages, as its handler read them: each one's topic · Pub."""
        self._check_in_handler(publishing(topics), "SendMessage")

    def check_publish_staged(self, topics: Iterable[str]) -> None:
        """PublishStaged: each staged chunk's topic · Pub, read from the chunks themselves (Stage
        checked it too, but a grant may have gone since, and the request names no topic)."""
        self._check_in_handler(publishing(topics), "PublishStaged", BATCH)

    def may_create(self, topic: str) -> None:
        """A request is about to auto-create `topic`: its user needs Topic·Create on it. A group's
        retry and dead-letter topics are the broker's own, as is anything it does by itself."""
        if not topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            self._check_in_handler([create_check(topic)], f"auto-creating topic {topic!r}")

    # --- changes (the Acls admin service; super users only, by the table) ------------------------

    def grant(self, by: Identity, user: str, entry: Entry) -> None:
        self._changed(by, "acl-grant", f"{user} {_describe(entry)}", lambda: self.store.grant(user, entry))

    def revoke(self, by: Identity, user: str, resource: Resource) -> Entry:
        gone: list[Entry] = []
        self._changed(by, "acl-revoke", f"{user} {resource}", lambda: gone.append(self.store.revoke(user, resource)))
        return gone[0]

    def forget(self, by: Identity, user: str) -> None:
        """A deleted user's entries go with it."""
        if self.store.acls.get(user):
            self._changed(by, "acl-revoke", f"{user} every entry (user deleted)", lambda: self.store.forget(user))

    def _changed(self, by: Identity, event: str, what: str, change: Any) -> None:
        try:
            change()
        except Exception as e:
            audit.record(event, str(by), what, f"failed: {e}")
            raise
        self.authorizer.replace(self.store.acls)
        audit.record(event, str(by), what, "ok")

    def adopt(self, acls: Acls) -> bool:
        """A replica takes its primary's entries (auth/principals.py) as its own -> whether any changed."""
        if not self.store.adopt(acls):
            return False
        self.authorizer.replace(self.store.acls)
        return True

    def entries(self, user: str = "") -> list[tuple[str, Entry]]:
        """(user, entry) of one user, or of every user, in name order."""
        acls = self.store.acls
        users = [user] if user else sorted(acls)
        return [(u, e) for u in users for e in acls.get(u, ())]


def _describe(e: Entry) -> str:
    ips = f" from {','.join(str(n) for n in e.source_ips)}" if e.source_ips else ""
    return f"{e.decision.value} {','.join(sorted(a.value for a in e.actions))} on {e.resource}{ips}"
