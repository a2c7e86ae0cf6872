"""The Messages pages (issue 31): `/ui/messages` (a search form, a GET: every search is a URL) and
`/ui/messages/ID?topic=T` (headers, properties, body, trace timeline). They ask the Messages service
the CLI's `message find|list|get|trace` ask (broker/api/messages.py), which searches every broker of a
cluster (a `--workers` server: every shard), signed as the viewer; models in ui/messages.py."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import grpc
from aiohttp import web

from rockmq.protocol import messages, messages_grpc
from rockmq.ui import messages as model
from rockmq.ui import render
from rockmq.ui.gather import TIMEOUT_S

if TYPE_CHECKING:
    from rockmq.ui.routes import Viewer

Stub = Callable[[], messages_grpc.MessagesStub]
# A search the broker refuses for its input (an illegal or unknown topic): the form again, with why.
_REFUSED = {grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404}


def _signed(v: Viewer) -> tuple[tuple[str, str], ...]:
    return v.admin.user.headers() if v.admin.user else ()


async def run(stub: messages_grpc.MessagesStub, s: model.Search, signed: tuple[tuple[str, str], ...]
              ) -> messages.MessagesResponse:
    """The Messages call a search is (by id: GetMessage; key: FindMessages; store time: ListMessages)."""
    reply: messages.MessagesResponse
    if s.kind == "id":
        reply = await stub.GetMessage(messages.GetMessageRequest(topic=s.topic, message_id=s.id),
                                      timeout=TIMEOUT_S, metadata=signed)
    elif s.kind == "key":
        reply = await stub.FindMessages(messages.FindMessagesRequest(
            topic=s.topic, key=s.key, from_ms=s.from_ms, to_ms=s.to_ms, max=model.MAX_SHOWN),
            timeout=TIMEOUT_S, metadata=signed)
    else:
        reply = await stub.ListMessages(messages.ListMessagesRequest(
            topic=s.topic, from_ms=s.from_ms, to_ms=s.to_ms, max=model.MAX_SHOWN), timeout=TIMEOUT_S, metadata=signed)
    return reply


def form(s: model.Search) -> str:
    """The search form: a GET to /ui/messages (the fields it leaves empty decide the kind of search)."""
    def field(name: str, label: str, value: str, hint: str = "") -> str:
        return (f'<label>{label} <input name="{name}" value="{escape(value)}"'
                + (f' placeholder="{escape(hint)}"' if hint else "") + "></label>")

    zone = "2026-11-29T22:00:00Z (with a zone)"
    return ('<form method="get" action="/ui/messages" class="search">'
            f'{field("topic", "Topic", s.topic)}{field("id", "Message id", s.id)}{field("key", "Key", s.key)}'
            f'{field("from", "From", s.from_text, zone)}{field("to", "To", s.to_text, "now")}'
            '<button>Search</button></form>'
            '<p class="muted">By message id; by key (within from/to if given); or by store time (from: the first '
            'messages stored at or after it). Times are ISO 8601 with a zone: Z or +01:00.</p>')


def _page(title: str, body: str, csrf: str, status: int = 200) -> web.Response:
    return web.Response(text=render.page(title, body, csrf), status=status, content_type="text/html")


def _described(s: model.Search) -> str:
    """What was searched, times shown with their zone."""
    window = "".join(f", {n} {model.format_ms(ms)}" for n, ms in (("from", s.from_ms), ("to", s.to_ms)) if ms)
    what = {"id": f"message id {s.id}", "key": f"key {s.key}", "time": "store time"}[s.kind]
    return f"<p>{escape(f'{s.topic}: {what}{window}')}</p>"


class MessagePages:
    """The two pages, asking the Messages service `stub()` gives (the dashboard's broker or shard)."""

    def __init__(self, stub: Stub) -> None:
        self.stub = stub

    async def search(self, request: web.Request, v: Viewer) -> web.Response:
        csrf = v.csrf
        try:
            s = model.search(request.query)
        except model.BadSearch as e:
            blank = model.Search(topic=request.query.get("topic", ""), id=request.query.get("id", ""),
                                 key=request.query.get("key", ""), from_text=request.query.get("from", ""),
                                 to_text=request.query.get("to", ""))
            return _page("Messages", form(blank) + render.error(str(e)), csrf, 400)
        if not s.kind:
            return _page("Messages", form(s), csrf)
        try:
            reply = await run(self.stub(), s, _signed(v))
        except grpc.aio.AioRpcError as e:
            if e.code() not in _REFUSED:
                raise
            return _page("Messages", form(s) + render.error(e.details() or e.code().name), v.csrf, _REFUSED[e.code()])
        note = model.more_note(reply)
        body = (form(s) + _described(s) + render.table("messages", model.found(reply))
                + (f'<p class="muted">{escape(note)}</p>' if note else "") + render.unreachable(list(reply.unreachable)))
        return _page("Messages", body, csrf)

    async def message(self, request: web.Request, v: Viewer) -> web.Response:
        csrf = v.csrf
        message_id, topic = request.match_info["id"], request.query.get("topic", "").strip()
        if not topic:
            return _page("Messages", form(model.Search(id=message_id)) + render.error("Give a topic (?topic=T)."),
                         csrf, 400)
        signed, stub = _signed(v), self.stub()
        reply = await run(stub, model.Search("id", topic, id=message_id), signed)
        trace = await stub.TraceMessage(messages.TraceMessageRequest(topic=topic, message_id=message_id),
                                        timeout=TIMEOUT_S, metadata=signed)
        stored = reply.messages[0]
        view = model.view_of(request.query)
        shown, note = model.body(stored.message.body, view)
        current = ' aria-current="page"'
        tabs = " ".join(f'<a href="?{escape(urlencode({"topic": topic, "view": w}))}"{current if w == view else ""}>'
                        f"{w}</a>" for w in model.VIEWS)
        events = "".join(f'<li data-kind="{escape(kind)}"><time>{escape(at)}</time> {escape(text)}</li>'
                         for at, kind, text in model.timeline(trace))
        body = (f"<h2>Headers</h2>{render.table('headers', model.headers(stored))}"
                f"<h2>Properties</h2>{render.table('properties', model.properties(stored))}"
                f'<h2>Body</h2><p class="tabs">{tabs}</p>'
                + (f'<p class="muted">{escape(note)}</p>' if note else "")
                + f'<pre id="body">{escape(shown)}</pre>'
                f'<h2>Trace</h2><ol id="trace">{events}</ol>'
                + render.unreachable(sorted({*reply.unreachable, *trace.unreachable})))
        return _page(f"Message {message_id}", body, csrf)
