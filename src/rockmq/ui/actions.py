"""The dashboard's changes (docs/dashboard.md "Changes"): reset a group's offsets, resend and purge its dead
letters. Each is a POST that carries a CSRF token and goes through the same admin call as the CLI
(`rockmq group reset`, `rockmq dlq resend|purge`), so it lands in the same audit log and, with auth, the
broker's ACLs decide. Without auth the dashboard changes nothing unless the broker runs with --ui-admin;
then a browser's CSRF token is the HMAC of a random value its own cookie carries (BrowserTokens)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from rockmq.protocol import admin
from rockmq.ui import models, render
from rockmq.ui.gather import Admin
from rockmq.when import parse_instant_ms

if TYPE_CHECKING:
    from rockmq.ui.routes import Page, Viewer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

BROWSER_COOKIE = "rockmq_ui_browser"
RESET_TIMEOUT_S = 30.0
PURGE_TIMEOUT_S = 30.0
RESEND_TIMEOUT_S = 60.0  # unpaced; a paced resend waits up to PACED_RESEND_TIMEOUT_S
PACED_RESEND_TIMEOUT_S = 600.0
DEFAULT_RATE = 100  # dead letters resent per second from the page (the CLI's --rate)
MAX_RATE = 10_000
READ_ONLY = "This dashboard is read-only: start the broker with --ui-admin (or --auth) to change things."


class BrowserTokens:
    """CSRF without logins (auth off, --ui-admin): a browser keeps a random value in an HttpOnly,
    SameSite=Strict cookie; its forms carry the HMAC of it under a key of this process. Another site can
    neither read the cookie nor compute the token, so it cannot forge a change."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(32)

    def token(self, cookie: str) -> str:
        return hmac.new(self._key, cookie.encode(), hashlib.sha256).hexdigest() if cookie else ""


def reset_target(to: str, time_text: str) -> tuple[str, int]:
    """The form's choice -> ResetOffsetRequest's (to, timestamp_ms); ValueError with a readable line."""
    if to in ("earliest", "latest"):
        return to, 0
    if to != "time":
        raise ValueError("Choose earliest, latest or a time.")
    if not time_text.strip():
        raise ValueError("Give the time to reset to, with its zone (e.g. 2026-11-29T10:00:00Z).")
    return "time", parse_instant_ms(time_text)


def time_range(query: dict[str, str]) -> tuple[int, int]:
    """?from= and ?to= of the dead-letters page (ISO 8601 with a zone; empty: no bound) -> ms."""
    return tuple(parse_instant_ms(query[k]) if query.get(k, "").strip() else 0  # type: ignore[return-value]
                 for k in ("from", "to"))


def resend_rate(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_RATE:
        raise ValueError(f"The rate is a whole number of messages per second, 1 to {MAX_RATE:,}.")
    return int(text)


def hidden_csrf(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(token)}">'


def reset_form(group: str, topics: list[str], token: str) -> str:
    """The group page's reset form: the topic, where to, and the "I understand" checkbox it needs."""
    options = "".join(f"<option>{escape(t)}</option>" for t in topics)
    return (f'<h2>Reset offsets</h2><form method="post" action="/ui/groups/{quote(group, safe="")}/reset" '
            f'class="change" id="reset">{hidden_csrf(token)}'
            f'<label>Topic <select name="topic" required>{options}</select></label>'
            '<label><input type="radio" name="to" value="earliest" checked> earliest</label>'
            '<label><input type="radio" name="to" value="latest"> latest</label>'
            '<label><input type="radio" name="to" value="time"> the time '
            '<input name="time" placeholder="2026-11-29T10:00:00Z"></label>'
            '<label><input type="checkbox" name="confirm" value="yes" required> I understand: the group moves '
            'there and drops what it has in flight on the topic</label><button>Reset offsets</button></form>')


class Changes(Admin):
    """The admin calls that change things, signed as the viewer (as the CLI's are)."""

    async def reset(self, group: str, topic: str, to: str, at_ms: int) -> admin.GroupInfo:
        reply: admin.GroupInfo = await self.stub.ResetOffset(
            admin.ResetOffsetRequest(group=group, topic=topic, to=to, timestamp_ms=at_ms),
            timeout=RESET_TIMEOUT_S, metadata=self._signed())
        return reply

    async def dead_letters(self, group: str, from_ms: int, to_ms: int) -> admin.DlqListResponse:
        reply: admin.DlqListResponse = await self.stub.ListDeadLetters(
            admin.DlqListRequest(group=group, from_ms=from_ms, to_ms=to_ms), timeout=RESET_TIMEOUT_S,
            metadata=self._signed())
        return reply

    async def resend(self, group: str, ids: list[str], rate: int) -> admin.DlqResendResponse:
        reply: admin.DlqResendResponse = await self.stub.ResendDeadLetters(
            admin.DlqResendRequest(group=group, message_ids=ids, all=not ids, rate=rate),
            timeout=PACED_RESEND_TIMEOUT_S if rate else RESEND_TIMEOUT_S, metadata=self._signed())
        return reply

    async def purge(self, group: str, before_ms: int) -> admin.DlqPurgeResponse:
        reply: admin.DlqPurgeResponse = await self.stub.PurgeDeadLetters(
            admin.DlqPurgeRequest(group=group, before_ms=before_ms), timeout=PURGE_TIMEOUT_S,
            metadata=self._signed())
        return reply


def changes(v: Viewer) -> Changes:
    return Changes(v.admin.stub, v.admin.user)


def _refused(title: str, message: str, v: Viewer, status: int = 400) -> web.Response:
    return _html(render.page(title, render.error(message), v.csrf), status)


def _done(title: str, lines: list[str], back: str, v: Viewer) -> web.Response:
    body = "".join(f'<p class="done">{escape(line)}</p>' for line in lines)
    return _html(render.page(title, f'{body}<p><a href="{escape(back)}">Back</a></p>', v.csrf))


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


async def reset(request: web.Request, v: Viewer) -> web.Response:
    """POST /ui/groups/NAME/reset: topic, to (earliest|latest|time), time, confirm."""
    group = request.match_info["name"]
    form = await request.post()
    if form.get("confirm") != "yes":
        return _refused("Not reset", "Tick “I understand” to reset the offsets.", v)
    topic = str(form.get("topic", ""))
    try:
        to, at = reset_target(str(form.get("to", "")), str(form.get("time", "")))
    except ValueError as e:
        return _refused("Not reset", str(e), v)
    await changes(v).reset(group, topic, to, at)
    where = models.format_time(at) if to == "time" else to
    return _done(f"Group {group} reset", [f"Reset group {group} on {topic} to {where}."],
                 models.href("groups", group), v)


async def dlq_groups(request: web.Request, v: Viewer) -> web.Response:
    """GET /ui/dlq: the groups with a dead-letter topic."""
    text, number = request.query.get("filter", ""), request.query.get("page", "1")
    names = [n.removeprefix("%DLQ%") for n in await v.admin.topic_names() if n.startswith("%DLQ%")]
    page = models.page_of(names, text, int(number) if number.isdigit() else 1)
    described = await v.admin.describe_topics([f"%DLQ%{g}" for g in page.names])
    table = models.Table(("group", "dead letters"), [
        [models.Cell(g, f"/ui/dlq/{quote(g, safe='')}"),
         models.Cell(models.format_count(sum(q.max_offset - q.min_offset for q in t.queues)))]
        for g, t in zip(page.names, described, strict=True)])
    return _html(render.page("Dead letters", render.table("dlq-groups", table), v.csrf))


async def dlq_group(request: web.Request, v: Viewer) -> web.Response:
    """GET /ui/dlq/GROUP?from=&to=: the group's dead letters stored in that range, with the resend and
    purge forms when this viewer may change things."""
    group = request.match_info["group"]
    try:
        from_ms, to_ms = time_range(dict(request.query))
    except ValueError as e:
        return _refused(f"Dead letters of {group}", str(e), v)
    reply = await changes(v).dead_letters(group, from_ms, to_ms)
    path = f"/ui/dlq/{quote(group, safe='')}"
    search = (f'<form method="get" action="{path}"><label>From <input name="from" value="'
              f'{escape(request.query.get("from", ""))}" placeholder="2026-11-29T10:00:00Z"></label> <label>to <input '
              f'name="to" value="{escape(request.query.get("to", ""))}"></label><button>Show</button></form>')
    more = f'<p class="muted">More matched: showing the first {len(reply.messages)}; narrow the range.</p>' \
        if reply.more else ""
    body = _dead_table(reply, v.changes) + more + render.unreachable(list(reply.unreachable))
    if v.changes:  # the table inside the resend form: its checkboxes are the ids to resend
        body = (f'<form method="post" action="{path}/resend" id="resend" class="change">{hidden_csrf(v.token)}'
                f'{body}<label>At most <input name="rate" value="{DEFAULT_RATE}" size="5"> a second</label> '
                '<button name="which" value="selected">Resend selected</button> '
                '<button name="which" value="all">Resend all</button></form>'
                f'<h2>Purge</h2><form method="post" action="{path}/purge" id="purge" class="change">'
                f'{hidden_csrf(v.token)}<label>Only those stored before <input name="before" '
                'placeholder="empty: all"></label><label><input type="checkbox" name="confirm" value="yes" required> '
                'I understand: purged dead letters are gone</label><button>Purge</button></form>')
    return _html(render.page(f"Dead letters of {group}", search + body, v.csrf))


def _dead_table(reply: admin.DlqListResponse, selectable: bool) -> str:
    head = ("<th>select</th>" if selectable else "") + "".join(
        f"<th>{h}</th>" for h in ("id", "topic", "attempts", "stored", "keys", "broker"))
    rows = "".join(
        "<tr>" + (f'<td><input type="checkbox" name="id" value="{escape(m.message_id)}"></td>' if selectable else "")
        + "".join(f"<td>{escape(str(c))}</td>" for c in (
            m.message_id, m.topic, m.attempts or "-", models.format_time(m.store_ms), ",".join(m.keys) or "-",
            m.broker)) + "</tr>" for m in reply.messages)
    empty = '<p class="empty">None.</p>' if not reply.messages else ""
    return f'<table id="dead"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{empty}'


async def resend(request: web.Request, v: Viewer) -> web.Response:
    """POST /ui/dlq/GROUP/resend: the ids ticked (which=selected) or every one (which=all), paced."""
    group = request.match_info["group"]
    form = await request.post()
    ids = [str(i) for i in form.getall("id", [])] if form.get("which") != "all" else []
    if form.get("which") != "all" and not ids:
        return _refused("Not resent", "Tick the dead letters to resend, or resend all.", v)
    try:
        rate = resend_rate(str(form.get("rate", DEFAULT_RATE)))
    except ValueError as e:
        return _refused("Not resent", str(e), v)
    reply = await changes(v).resend(group, ids, rate)
    lines = [f"Sent back {reply.resent} dead letters to group {group}."]
    lines += [f"Not sent back: {why}" for why in reply.skipped]
    if reply.unknown:
        lines.append(f"No such dead letter: {', '.join(reply.unknown)}")
    return _done(f"Dead letters of {group} resent", lines, f"/ui/dlq/{quote(group, safe='')}", v)


async def purge(request: web.Request, v: Viewer) -> web.Response:
    """POST /ui/dlq/GROUP/purge: confirm, and optionally before (a time)."""
    group = request.match_info["group"]
    form = await request.post()
    if form.get("confirm") != "yes":
        return _refused("Not purged", "Tick “I understand” to purge the dead letters.", v)
    before = str(form.get("before", ""))
    try:
        before_ms = parse_instant_ms(before) if before.strip() else 0
    except ValueError as e:
        return _refused("Not purged", str(e), v)
    reply = await changes(v).purge(group, before_ms)
    return _done(f"Dead letters of {group} purged", [f"Purged {reply.purged} dead letters of group {group}."],
                 f"/ui/dlq/{quote(group, safe='')}", v)


def add_actions(app: web.Application, guarded: Callable[[Page, bool], Handler]) -> None:
    """Mount the dead-letter pages and the change routes; `guarded` is the Dashboard's (routes.py)."""
    app.router.add_get("/ui/dlq", guarded(dlq_groups, False), allow_head=False)
    app.router.add_get("/ui/dlq/{group}", guarded(dlq_group, False), allow_head=False)
    app.router.add_post("/ui/groups/{name}/reset", guarded(reset, True))
    app.router.add_post("/ui/dlq/{group}/resend", guarded(resend, True))
    app.router.add_post("/ui/dlq/{group}/purge", guarded(purge, True))
