"""log_escape: no value a client sends can start a log line, close its quotes or fill the log
(issue 32 §6); audit lines in a fixed field order, or JSON."""

from __future__ import annotations

import json
import logging
import re
import sys

import pytest

from rockmq.auth import audit
from rockmq.auth.identity import Identity
from rockmq.config import ConfigError, load_settings
from rockmq.log_escape import AUDIT_FIELDS, INDENT, MAX_MESSAGE, MAX_VALUE, SafeFormatter, clean, cut, escape

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORGED = ('t\n2026-11-29 08:00:00,000 WARNING rockmq.audit: acl-grant who="admin" from="127.0.0.1" '
          'what="mallory * All allow" result="ok"')
# An audit line as a reader parses it: at a line's start, the fields in their order, each quoted.
AUDIT_LINE = re.compile(r'^\S+ \S+ WARNING rockmq\.audit: (\S+) who="((?:[^"\\]|\\.)*)" from="((?:[^"\\]|\\.)*)" '
                        r'what="((?:[^"\\]|\\.)*)" result="((?:[^"\\]|\\.)*)"$')


def _lines(record: logging.LogRecord, audit_format: str = "text") -> list[str]:
    return SafeFormatter(FORMAT, audit_format).format(record).split("\n")


def _audit_record(what: str) -> logging.LogRecord:
    """What audit.record hands the handlers: caught on the audit logger."""
    caught: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    catch = Catch()
    audit.audit.addHandler(catch)
    try:
        audit.record("acl-grant", Identity("bob", source_ip="10.0.0.9"), what, "failed: no such user")
    finally:
        audit.audit.removeHandler(catch)
    return caught[0]


def test_escape_keeps_a_value_on_its_line_and_inside_its_quotes():
    assert escape('a\nb\r\t"c\\\x1b\x85\u2028') == 'a\\nb\\r\\t\\"c\\\\\\x1b\\x85\\u2028'
    assert escape("topic-1.é") == "topic-1.é"


def test_cut_says_how_much_was_left_out():
    assert cut("x" * (MAX_VALUE + 10)) == "x" * MAX_VALUE + "...[10 more characters]"
    assert cut("short") == "short"
    assert clean(clean("a\n")) == "a\\n"  # escaped once


def test_a_forged_audit_line_in_a_name_is_one_line_that_parses_as_what_it_is():
    lines = _lines(_audit_record(f"Topic:{FORGED} Pub"))
    assert len(lines) == 1, lines
    event, who, source, what, result = AUDIT_LINE.match(lines[0]).groups()  # type: ignore[union-attr]
    assert (event, who, source, result) == ("acl-grant", "bob", "10.0.0.9", "failed: no such user")
    assert what.startswith("Topic:t\\n2026")


def test_audit_lines_as_json():
    (line,) = _lines(_audit_record(f"Topic:{FORGED} Pub"), "json")
    parsed = json.loads(line)
    assert [k for k in parsed][3:] == ["event", "who", "from", "what", "result"]
    assert parsed["what"] == cut(f"Topic:{FORGED} Pub")  # the value itself, cut; JSON escapes it
    assert parsed["who"] == "bob" and parsed["result"] == "failed: no such user"
    assert "\n" not in line and "\u2028" not in line


def test_every_line_escapes_and_cuts_its_values():
    record = logging.LogRecord("rockmq.broker", logging.INFO, __file__, 1, "group %s subscribes to %r with %d tags",
                               (FORGED, "x" * 100_000 + "\n", 3), None)
    (line,) = _lines(record)
    assert "group t\\n2026" in line and "with 3 tags" in line and len(line) < 2 * MAX_VALUE + 200
    assert not record.args[0].startswith("t\\")  # type: ignore[index]  # the record itself unchanged (other handlers)


def test_a_message_built_with_input_stays_on_one_line_and_bounded():
    record = logging.LogRecord("grpc", logging.WARNING, __file__, 1, FORGED * 1000, None, None)
    (line,) = _lines(record)
    assert len(line) < MAX_MESSAGE + 200


def test_an_exception_message_cannot_start_a_line():
    try:
        raise ValueError(FORGED)
    except ValueError:
        record = logging.LogRecord("rockmq.broker", logging.ERROR, __file__, 1, "boom", None, sys.exc_info())
    first, *rest = _lines(record)
    assert first.endswith("boom") and rest and all(line.startswith(INDENT) for line in rest), rest


def test_the_fields_ride_on_the_record():
    assert getattr(_audit_record("x"), AUDIT_FIELDS) == {"event": "acl-grant", "who": "bob", "from": "10.0.0.9",
                                                         "what": "x", "result": "failed: no such user"}


def test_a_str_identity_is_split_as_identity_writes_it():
    assert audit.subject("alice from 10.0.0.1") == ("alice", "10.0.0.1")
    assert audit.subject(Identity()) == (audit.ANONYMOUS, audit.UNKNOWN)


def test_audit_format_is_a_checked_setting():
    assert load_settings(overrides={"audit_format": "json"}).audit_format == "json"
    with pytest.raises(ConfigError, match="audit_format"):
        load_settings(overrides={"audit_format": "xml"})
