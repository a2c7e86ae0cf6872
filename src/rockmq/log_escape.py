"""Nothing a client sends can shape a server's log (docs/security.md): a topic name, a user name or an
exception message carrying a newline and a made-up line would otherwise write a line of its own
that reads like a real one (`... rockmq.audit: acl-grant who=admin ... result=ok`).

Installed on the log handlers of `rockmq serve` and `rockmq namesrv` (`escape_handlers`), like the
rate limit, so it covers every line of every logger in one place: each argument of a line is
escaped (backslash, quotes, control characters, Unicode line breaks) and cut to `MAX_VALUE`
characters; the message is cut to `MAX_MESSAGE` and kept to one line; a traceback's lines are all
indented. So a line starting at column 0 always starts a record, and a quoted value ends only at
its closing quote. Audit lines (`auth/audit.py`) can be written as JSON objects instead
(`--audit-format json`), one a line, each starting with `{` where text lines start with a date.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from numbers import Number
from typing import Any

MAX_VALUE = 256  # characters of one value: a name or a reason is shorter, a flood of bytes is cut
MAX_MESSAGE = 4096  # characters of a whole message, its values escaped
AUDIT_FIELDS = "audit_fields"  # a record's attribute holding an audit line's fields, in their order
AUDIT_FORMATS = ("text", "json")
INDENT = "    "  # what a traceback's lines start with: never a date, so never a record's start

_ESCAPED = re.compile(r'[\\"\x00-\x1f\x7f-\x9f\u2028\u2029]')
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class Clean(str):
    """A value already escaped and cut (`clean`): the formatter writes it as it is, not escaped twice."""


def _code(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def escape(text: str) -> str:
    """Backslash, double quotes and every control character (line breaks, ESC, Unicode's line and
    paragraph separators) written as escapes: the text stays on its line and inside its quotes."""
    return _ESCAPED.sub(_code, text)


def one_line(text: str) -> str:
    """Only the control characters escaped: for text written by code (a template, a traceback's
    line) whose quotes are its own, around values that may still carry a line break."""
    return _CONTROL.sub(_code, text)


def cut(text: str, limit: int = MAX_VALUE) -> str:
    """At most `limit` characters, saying how many more there were (a flood of input stays short)."""
    return text if len(text) <= limit else f"{text[:limit]}...[{len(text) - limit} more characters]"


def clean(value: object) -> Clean:
    """A client's value, as a log line carries it: cut, then escaped."""
    return value if isinstance(value, Clean) else Clean(escape(cut(str(value))))


class _Shown:
    """An argument of a log line, as `%s` (cut, escaped) and `%r` (cut; repr escapes the rest) show it."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return clean(self.value)

    def __repr__(self) -> str:
        return repr(self.value if isinstance(self.value, Clean) else cut(str(self.value)))


def shown(args: Any) -> Any:
    """A record's arguments with every non-number one shown safely (numbers keep `%d` and `%.1f`)."""
    if isinstance(args, Mapping):
        return {k: v if isinstance(v, Number) else _Shown(v) for k, v in args.items()}
    if isinstance(args, tuple):
        return tuple(a if isinstance(a, Number) else _Shown(a) for a in args)
    return args


class SafeFormatter(logging.Formatter):
    """Every line escaped, cut and on one line (the module's doc); audit lines JSON with `audit_format="json"`."""

    def __init__(self, fmt: str | None = None, audit_format: str = "text") -> None:
        super().__init__(fmt)
        self.audit_json = audit_format == "json"

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, AUDIT_FIELDS, None)
        if self.audit_json and fields is not None:
            return self.as_json(record, fields)
        return super().format(logging.makeLogRecord({**record.__dict__, "args": shown(record.args)}))

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return one_line(cut(super().formatMessage(record), MAX_MESSAGE))

    def formatException(self, ei: Any) -> str:  # noqa: N802
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:  # noqa: N802
        return _indented(super().formatStack(stack_info))

    def as_json(self, record: logging.LogRecord, fields: Mapping[str, object]) -> str:
        """One JSON object: when, level, logger, then the audit fields in their order (strings cut)."""
        line: dict[str, object] = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name}
        line.update((k, v if isinstance(v, Number) else cut(str(v))) for k, v in fields.items())
        return json.dumps(line, ensure_ascii=True)


def _indented(text: str) -> str:
    """A traceback or stack, each line indented and kept to itself: an exception's message cannot
    start a line of its own."""
    return "\n".join(INDENT + one_line(line) for line in text.splitlines())


def escape_handlers(logger: logging.Logger, audit_format: str = "text") -> None:
    """Every handler of `logger` (the root: everything a server writes) formats through SafeFormatter,
    with the format it had."""
    for handler in logger.handlers:
        fmt = handler.formatter._fmt if handler.formatter is not None else None
        handler.setFormatter(SafeFormatter(fmt, audit_format))
