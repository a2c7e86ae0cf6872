"""The `rockmq.audit` logger: one line per failed authentication, refused authorization and
admin change (who, what, from where, result), never a secret. Operators route it apart with the
logging configuration (it propagates to the root logger by default)."""

from __future__ import annotations

import logging

audit = logging.getLogger("rockmq.audit")


def record(event: str, who: str, what: str, result: str) -> None:
    """One audit line: `event who=... what=... result=...` (`who` says the user and where from)."""
    audit.warning(f"{event} who=%s what=%s result=%s", who, what, result)  # the event in the template: its own kind
