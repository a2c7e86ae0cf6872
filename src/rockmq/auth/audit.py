"""The `rockmq.audit` logger: one line per failed authentication, refused authorization and
admin change (who, from where, what, result), never a secret. Operators route it apart with the
logging configuration (it propagates to the root logger by default).

The line's fields come in a fixed order, each value quoted and escaped (log_escape.py), so a value
cannot close its quotes, add a field or start a line: `EVENT who="USER" from="IP" what="..."
result="..."`. The fields also ride on the record (`AUDIT_FIELDS`): the rate limit counts per
user and source by them (plumbing/log_limit.py) and `--audit-format json` writes them as a JSON object."""

from __future__ import annotations

import logging

from rockmq.auth.identity import Identity
from rockmq.log_escape import AUDIT_FIELDS, clean

audit = logging.getLogger("rockmq.audit")
ANONYMOUS = "anonymous"
UNKNOWN = "unknown"
_FROM = " from "  # how Identity's str joins user and source


def subject(who: Identity | str | None) -> tuple[str, str]:
    """(user, source IP) of an identity, or of its str (`USER from IP`, which callers long passed:
    user names hold no spaces, so the last ' from ' splits it); None: the broker acting by itself."""
    if who is None:
        return "", ""
    if isinstance(who, Identity):
        return who.user or ANONYMOUS, who.source_ip or UNKNOWN
    user, joined, source = who.rpartition(_FROM)
    return (user, source) if joined else (who, "")


def record(event: str, who: Identity | str | None, what: str, result: str) -> None:
    """One audit line (the module's doc); `event` is the code's own name, part of the template."""
    user, source = subject(who)
    fields = {"event": event, "who": user, "from": source, "what": what, "result": result}
    audit.warning(f'{event} who="%s" from="%s" what="%s" result="%s"',  # the event in the template: its own kind
                  clean(user), clean(source), clean(what), clean(result), extra={AUDIT_FIELDS: fields})
