"""The Messages pages' models (issue 31): a search as its GET query says it (by id, by key within a time
range, or by store time), the messages found as a table, one message's headers, properties and body
(text / JSON pretty / hex), and its trace as a timeline. Pure: the Messages service's replies in, cells
worded with their units and zones out (tests/unit/test_ui_messages.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from rockmq.protocol import messages, pb
from rockmq.ui.models import Cell, Table, format_bytes
from rockmq.when import parse_instant_ms

MAX_SHOWN = 100  # messages a search shows (the Messages service's default)
VIEWS = ("text", "json", "hex")


class BadSearch(ValueError):
    """A search the page cannot run: its message is shown on the page (400)."""


@dataclass(frozen=True)
class Search:
    """What `/ui/messages?...` asks: `kind` "id", "key" or "time" ("" : only the form); times in ms
    since the epoch (0: not given), as written (`from_text`, `to_text`) for the form to show again."""

    kind: str = ""
    topic: str = ""
    id: str = ""
    key: str = ""
    from_ms: int = 0
    to_ms: int = 0
    from_text: str = ""
    to_text: str = ""


def _instant(query: Mapping[str, str], name: str) -> tuple[str, int]:
    text = query.get(name, "").strip()
    if not text:
        return "", 0
    try:
        return text, parse_instant_ms(text)
    except ValueError as e:
        raise BadSearch(f"{name}: {e}") from None


def search(query: Mapping[str, str]) -> Search:
    """The search a query asks (rockmq's one time parser reads `from` and `to`: ISO 8601 with a zone)."""
    topic, id_, key = (query.get(n, "").strip() for n in ("topic", "id", "key"))
    from_text, from_ms = _instant(query, "from")
    to_text, to_ms = _instant(query, "to")
    if not (topic or id_ or key or from_text or to_text):
        return Search()
    if not topic:
        raise BadSearch("Give a topic.")
    if to_ms and to_ms < from_ms:
        raise BadSearch("to is before from.")
    if id_:
        return Search("id", topic, id=id_)
    if key:
        return Search("key", topic, key=key, from_ms=from_ms, to_ms=to_ms, from_text=from_text, to_text=to_text)
    if not from_text:
        raise BadSearch("Give a message id, a key, or a from time (the first messages stored at or after it).")
    return Search("time", topic, from_ms=from_ms, to_ms=to_ms, from_text=from_text, to_text=to_text)


def format_ms(ms: int) -> str:
    """A message's time to the millisecond, with its zone (UTC: the same on every viewer's screen)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def message_href(topic: str, message_id: str) -> str:
    return f"/ui/messages/{quote(message_id, safe='')}?{urlencode({'topic': topic})}"


def found(reply: messages.MessagesResponse) -> Table:
    """The messages a search found, oldest first: id (linked to its page), where, keys, tag, stored, size."""
    rows = []
    for s in reply.messages:
        m, sp = s.message, s.message.system_properties
        rows.append([Cell(sp.message_id, message_href(m.topic.name, sp.message_id)), Cell(m.topic.name),
                     Cell(f"{s.broker}:{sp.queue_id}"), Cell(str(sp.queue_offset)), Cell(", ".join(sp.keys) or "-"),
                     Cell(sp.tag if sp.HasField("tag") else "-"), Cell(format_ms(sp.store_timestamp.ToMilliseconds())),
                     Cell(format_bytes(len(m.body)))])
    return Table(("Message id", "Topic", "Queue", "Offset", "Keys", "Tag", "Stored", "Size"), rows)


def more_note(reply: messages.MessagesResponse) -> str:
    """What a reply that matched more than it carries says ("": all shown)."""
    return f"More matched: showing the first {len(reply.messages)}; narrow from/to." if reply.more else ""


def headers(stored: messages.StoredMessage) -> Table:
    """A message's system properties, each a row (those not set left out)."""
    m, sp = stored.message, stored.message.system_properties
    rows = [("Message id", sp.message_id), ("Topic", m.topic.name), ("Broker", stored.broker),
            ("Queue", str(sp.queue_id)), ("Offset", str(sp.queue_offset)),
            ("Type", pb.MessageType.Name(sp.message_type)),
            ("Tag", sp.tag if sp.HasField("tag") else ""), ("Keys", ", ".join(sp.keys)),
            ("Message group", sp.message_group if sp.HasField("message_group") else ""),
            ("Priority", str(sp.priority) if sp.HasField("priority") else ""),
            ("Stored", format_ms(sp.store_timestamp.ToMilliseconds())),
            ("Born", format_ms(sp.born_timestamp.ToMilliseconds())), ("Born host", sp.born_host),
            ("Size", format_bytes(len(m.body)))]
    return Table(("Header", "Value"), [[Cell(k), Cell(v)] for k, v in rows if v])


def properties(stored: messages.StoredMessage) -> Table:
    return Table(("Property", "Value"),
                 [[Cell(k), Cell(v)] for k, v in sorted(stored.message.user_properties.items())])


def body(data: bytes, view: str) -> tuple[str, str]:
    """The body as `view` shows it, and a note ("": none): text (UTF-8, undecodable bytes replaced), JSON
    pretty (the text when it is not JSON, said so), or hex (16 bytes a line)."""
    if view == "hex":
        return "\n".join(data[i:i + 16].hex(" ") for i in range(0, len(data), 16)), ""
    text = data.decode(errors="replace")
    if view == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False), ""
        except ValueError:
            return text, "Not JSON: shown as text."
    return text, ""


def view_of(query: Mapping[str, str]) -> str:
    view = query.get("view", "text")
    return view if view in VIEWS else "text"


_WORDS = {"delivered": "delivered to group {g}", "redelivered": "redelivered to group {g}",
          "acked": "acknowledged by {g}", "invisible-changed": "invisibility changed by {g}",
          "dead-lettered": "dead-lettered by {g}", "committed": "committed", "rolled-back": "rolled back",
          "timer-fired": "due: put in its queue", "stored": "stored", "checked": "checked", "recalled": "recalled"}


def event_text(e: messages.TraceEvent) -> str:
    """One trace event as a person reads it: what happened, to whom, where."""
    what = _WORDS.get(e.kind, e.kind).format(g=e.group or "-")
    where = f" on {e.broker}:{e.queue_id} at offset {e.offset}" if e.offset != -1 and e.kind == "stored" else ""
    who = f" (client {e.client_id}" + (f", attempt {e.attempt})" if e.attempt else ")") if e.client_id else ""
    return what + where + who


def timeline(trace: messages.TraceMessageResponse) -> list[tuple[str, str, str]]:
    """The trace's events, oldest first: (time with zone, kind, what happened)."""
    return [(format_ms(e.at_ms), e.kind, event_text(e)) for e in trace.events]
