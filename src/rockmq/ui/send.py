"""The topic page's "send a test message": a form (shown only when this viewer may change things: auth, or
--ui-admin) and its POST /ui/topics/NAME/send. The message goes as `rockmq message send` sends it: through
rockmq's client, signed as the viewer (so the broker's Pub ACL decides). The ui sits beside the client in
the layers, so the broker (or the `--workers` supervisor) hands it the `Send` that does it
(broker/dashboard_send.py). The form offers the fields the topic's types need (a message group for FIFO,
a delay for DELAY, a lite topic for LITE, a priority for PRIORITY); a TRANSACTION message needs a
producer that commits it, so none is sent from here."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from rockmq.plumbing.credentials import Credentials
from rockmq.ui import render
from rockmq.ui.access import split_list
from rockmq.ui.actions import Handler, hidden_csrf
from rockmq.when import parse_delay_ms

if TYPE_CHECKING:
    from rockmq.ui.routes import Page, Viewer

MAX_BODY_BYTES = 64 * 1024  # a test message: typed into a form
TRANSACTION_ONLY = ("A TRANSACTION topic takes half messages that their producer commits or rolls back: send from "
                    "a transactional producer (rockmq's client), not from here.")


@dataclass(frozen=True)
class Outgoing:
    """A test message as the form gives it (what rockmq's client Message takes)."""

    topic: str
    body: bytes
    tag: str = ""
    keys: tuple[str, ...] = ()
    message_group: str = ""
    deliver_at_ms: int = 0  # 0: at once
    lite_topic: str = ""
    priority: int | None = None


@dataclass(frozen=True)
class Sent:
    message_id: str
    broker: str
    queue_id: int  # -1: a PRIORITY message (the broker placed it) or a lite topic's
    offset: int


class Refused(Exception):
    """A send refused (by the broker, or the client before it): the page's HTTP status and one line."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status, self.line = status, line


# The viewer's credentials (None: auth off) and the message -> where it went, or Refused.
Send = Callable[[Outgoing, Credentials | None], Awaitable[Sent]]


def http_status(code: int) -> int:
    """A RocketMQ status code (40300 FORBIDDEN, 40402 TOPIC_NOT_FOUND, 42900 TOO_MANY_REQUESTS...) -> the
    page's HTTP status: its first three digits for a 4xx, else 502 (the broker failed)."""
    status = code // 100
    return status if 400 <= status < 500 else 502


def outgoing(topic: str, form: dict[str, str], now_ms: int) -> Outgoing:
    """The send form -> the message; ValueError with a readable line."""
    body = form.get("body", "").encode()
    if len(body) > MAX_BODY_BYTES:
        raise ValueError(f"A test message's body is at most {MAX_BODY_BYTES // 1024} KiB: send larger ones with the CLI.")
    group, delay, priority = (form.get(k, "").strip() for k in ("message_group", "delay", "priority"))
    if len([given for given in (group, delay, priority) if given]) > 1:
        raise ValueError("A message is FIFO (a message group), delayed or PRIORITY: give one of them.")
    if priority and not priority.isdigit():
        raise ValueError(f"The priority is a whole number from 0, not {priority!r}.")
    return Outgoing(topic, body, form.get("tag", "").strip(), tuple(split_list(form.get("keys", ""))), group,
                    now_ms + parse_delay_ms(delay) if delay else 0, form.get("lite_topic", "").strip(),
                    int(priority) if priority else None)


def send_form(topic: str, types: Sequence[str], token: str) -> str:
    """The topic page's form, with the fields its message types need."""
    if set(types) <= {"TRANSACTION"}:
        return f'<h2>Send a test message</h2><p class="muted" id="send-why-not">{escape(TRANSACTION_ONLY)}</p>'
    extra = {"FIFO": '<label>Message group <input name="message_group" placeholder="FIFO: needed"></label>',
             "DELAY": '<label>Deliver after <input name="delay" placeholder="30s, 5m, 2h"></label>',
             "LITE": '<label>Lite topic <input name="lite_topic" placeholder="LITE: needed"></label>',
             "PRIORITY": '<label>Priority <input name="priority" inputmode="numeric" placeholder="0"></label>'}
    fields = "".join(html for kind, html in extra.items() if kind in types)
    note = f'<p class="muted">{escape(TRANSACTION_ONLY)}</p>' if "TRANSACTION" in types else ""
    return (f'<h2>Send a test message</h2>{note}<form method="post" action="/ui/topics/{quote(topic, safe="")}/send" '
            f'id="send" class="change">{hidden_csrf(token)}<label>Body <textarea name="body" rows="3" cols="40">'
            '</textarea></label><label>Tag <input name="tag"></label>'
            f'<label>Keys <input name="keys" placeholder="comma separated"></label>{fields}'
            '<button>Send</button></form>')


def sent_line(topic: str, sent: Sent) -> str:
    """The result page's line: the id linked to its message page, and where it was stored."""
    where = f"queue {sent.queue_id}, " if sent.queue_id >= 0 else ""
    link = f"/ui/messages/{quote(sent.message_id, safe='')}?topic={quote(topic, safe='')}"
    return (f'<p class="done">Sent <a id="sent" href="{escape(link)}">{escape(sent.message_id)}</a> to '
            f"{escape(topic)} (broker {escape(sent.broker)}, {where}offset {sent.offset:,}).</p>")


@dataclass
class SendPage:
    send: Send

    async def post(self, request: web.Request, v: Viewer) -> web.Response:
        """POST /ui/topics/NAME/send: body, tag, keys, and the fields of the topic's types."""
        topic = request.match_info["name"]
        back = f'<p><a href="/ui/topics/{quote(topic, safe="")}">Back to {escape(topic)}</a></p>'
        form = {k: str(value) for k, value in (await request.post()).items()}
        try:
            sent = await self.send(outgoing(topic, form, int(time.time() * 1000)), v.admin.user)
        except ValueError as e:
            return _html(render.page("Not sent", render.error(str(e)) + back, v.csrf), 400)
        except Refused as e:
            return _html(render.page("Not sent", render.error(e.line) + back, v.csrf), e.status)
        return _html(render.page("Message sent", sent_line(topic, sent) + back, v.csrf))

    def add(self, app: web.Application, guarded: Callable[[Page, bool], Handler]) -> None:
        app.router.add_post("/ui/topics/{name}/send", guarded(self.post, True))


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")
