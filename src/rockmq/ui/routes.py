"""The dashboard's routes on the HTTP port's app (rockmq/http/app.py): each page gathers (gather.py),
models (models.py) and renders (render.py). A failed admin call shows as a message on the page: NOT_FOUND
as 404, PERMISSION_DENIED as 403, any other as 502; never a traceback. With auth on, a page without a
login answers 401 with the login form (sessions.py): no data is served unauthenticated."""

from __future__ import annotations

import asyncio
import base64
import hmac
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from aiohttp import web

from rockmq.http.app import Collect
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import acl_grpc, admin_grpc, messages_grpc, users_grpc
from rockmq.ui import actions, models, panels, render
from rockmq.ui.access import AccessPages
from rockmq.ui.counters import RateMeter, Reading, families, read
from rockmq.ui.gather import Admin
from rockmq.ui.history import Sample
from rockmq.ui.live import KEEP, Live
from rockmq.ui.message_pages import MessagePages
from rockmq.ui.send import Send, SendPage, send_form
from rockmq.ui.sessions import COOKIE, Session, Sessions
from rockmq.ui.throttle import LoginThrottle, keys_of

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
SAMPLE_S = 2.0  # how often the counters are read while someone looks
VIEWED_S = 60.0  # ... that is, while a page or the overview's poll came this recently
# A page reads the counters itself only if none were read this recently (the first view after a while):
# a scrape computes every group's lag, hundreds of ms with 1,000 groups (bench/ui_bench.py).
STALE_S = 3 * SAMPLE_S
MORE_CLIENTS = '<p class="muted">More clients than one reply holds: rockmq client list --group NAME lists them.</p>'
MAX_FORM_BYTES = 4096  # a login form is a name and a secret
_STATUS = {grpc.StatusCode.NOT_FOUND: (404, "Not found"), grpc.StatusCode.PERMISSION_DENIED: (403, "Not allowed"),
           grpc.StatusCode.INVALID_ARGUMENT: (400, "Bad request")}


@dataclass(frozen=True)
class Viewer:
    """Who asks a page: the admin service as them, and their session's CSRF token ("": auth off); whether
    they may change things (auth on, or --ui-admin) and the CSRF token their forms carry (ui/actions.py)."""

    admin: Admin
    csrf: str = ""
    changes: bool = False
    token: str = ""


Page = Callable[[web.Request, Viewer], Awaitable[web.StreamResponse]]


@dataclass
class Dashboard:
    """Where the admin calls go (`admin`: the broker serving now, or a shard of a `--workers` server) and
    the broker's own counters (`counters`: its /metrics scrape, as families or text)."""

    admin: Callable[[], admin_grpc.AdminStub]
    counters: Collect
    auth: bool
    tls: bool = False
    ui_admin: bool = False
    browsers: actions.BrowserTokens = field(default_factory=actions.BrowserTokens)
    meter: RateMeter = field(default_factory=RateMeter)
    sessions: Sessions = field(default_factory=Sessions)
    throttle: LoginThrottle = field(default_factory=LoginThrottle)  # wrong secrets on the login form
    viewed: float = 0.0
    # How the counters are asked for (a `--workers` server's shards want a user with auth on): the last
    # viewer's HTTP Basic authorization.
    authorization: str = ""
    send: Send | None = None  # the topic page's "send a test message" (ui/send.py), when handed one
    live: Live = field(default_factory=Live)  # the overview's charts, top lag and alerts

    async def sample(self) -> None:
        answer = await self.counters(self.authorization)
        if not isinstance(answer, tuple):  # (status, why): not now
            reading = read(families(answer), time.monotonic(), KEEP)
            self.meter.add(reading)
            self.live.read(reading)

    async def sampling(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp's cleanup context: read the counters every SAMPLE_S while someone looks."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(SAMPLE_S)
                if time.monotonic() - self.viewed < VIEWED_S:
                    try:
                        await self.sample()
                    except Exception:  # a scrape that failed now may not next time: the loop goes on
                        log.exception("reading the counters for the dashboard")

        task = asyncio.create_task(loop())
        yield
        task.cancel()

    async def reading(self) -> Reading | None:
        """The counters read within STALE_S (read now if not; None if they cannot be)."""
        self.viewed = time.monotonic()
        latest = self.meter.latest
        if latest is None or time.monotonic() - latest.at >= STALE_S:
            await self.sample()
        return self.meter.latest

    async def rates(self) -> tuple[float, dict[str, float]]:
        """Messages in per second (total, per topic), from counters read lately."""
        await self.reading()
        rates = self.meter.rates()
        return rates.messages_in, rates.by_topic

    async def overview(self, request: web.Request, v: Viewer) -> web.Response:
        cluster = await v.admin.cluster()
        rate, _ = await self.rates()
        latest = self.meter.latest
        o = models.overview(cluster, rate, latest.storage if latest else {}, int(time.time() * 1000))
        return _html(render.overview(o, v.csrf, self.live.html(latest)))

    async def overview_api(self, request: web.Request, v: Viewer) -> web.Response:
        """What the overview's script polls: the moving numbers."""
        rate, _ = await self.rates()
        return web.json_response({"rate_in": models.format_rate(rate),
                                  "as_of": models.format_time(int(time.time() * 1000)), "charts": self.live.json()})

    async def topics(self, request: web.Request, v: Viewer) -> web.Response:
        text, number = _listing_query(request)
        page = models.page_of(await v.admin.topic_names(), text, number)
        _, by_topic = await self.rates()
        listed = models.topics(await v.admin.describe_topics(page.names), by_topic, text, page)
        return _html(render.listing("Topics", "topics", "/ui/topics", listed, v.csrf))

    async def topic(self, request: web.Request, v: Viewer) -> web.Response:
        name = request.match_info["name"]
        info = (await v.admin.describe_topics([name]))[0]
        # The groups on the topic, found in the counters (describing every group is a call each), their
        # lag by the admin calls (every broker's).
        reading = await self.reading()
        groups = await v.admin.describe_groups(sorted(reading.positions.get(name, ())) if reading else [])
        body = (f"<p>{info.queue_count} queues, types {', '.join(info.message_types)}, perm {info.perm or 'rw'}</p>"
                f"<h2>Queues</h2>{render.table('queues', models.queues(info))}"
                f"<h2>Consumer groups</h2>{render.table('groups', models.topic_groups(name, groups))}"
                f"{render.unreachable(list(info.unreachable))}")
        if v.changes and self.send is not None:
            body += send_form(name, list(info.message_types), v.token)
        return _html(render.page(f"Topic {name}", body, v.csrf))

    async def groups(self, request: web.Request, v: Viewer) -> web.Response:
        text, number = _listing_query(request)
        page = models.page_of(await v.admin.group_names(), text, number)
        listed = models.groups(await v.admin.describe_groups(page.names), text, page)
        return _html(render.listing("Groups", "groups", "/ui/groups", listed, v.csrf))

    async def group(self, request: web.Request, v: Viewer) -> web.Response:
        name = request.match_info["name"]
        info = (await v.admin.describe_groups([name]))[0]
        clients, lanes = await v.admin.members(name)
        body = (f"<p>{'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, consume mode "
                f"{info.consume_mode or 'not set yet'}, {info.inflight:,} msg in flight</p>"
                f"<h2>Lag per queue</h2>{render.table('lag', models.lag(info))}{render.unreachable(list(info.unreachable))}"
                f"<h2>Members</h2>{render.table('members', panels.members(list(clients.clients), lanes))}"
                f"{render.unreachable(list(clients.unreachable))}"
                f"{MORE_CLIENTS if clients.more else ''}")
        if v.changes:
            body += actions.reset_form(name, sorted({q.topic for q in info.queues}), v.token)
        return _html(render.page(f"Group {name}", body, v.csrf))

    # --- logins (auth on) --------------------------------------------------------------------------

    def session(self, request: web.Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE, ""))

    async def login_form(self, request: web.Request) -> web.StreamResponse:
        if not self.auth or self.session(request):
            raise web.HTTPSeeOther("/ui/")
        return _html(render.login())

    async def login(self, request: web.Request) -> web.StreamResponse:
        """A user's access key and secret, checked by the broker: an admin call signed with them."""
        if not self.auth:
            raise web.HTTPSeeOther("/ui/")
        if not _same_origin(request) or (request.content_length or 0) > MAX_FORM_BYTES:
            return _html(render.login("Log in from this dashboard's own page."), 403)
        form = await request.post()
        key, secret = str(form.get("access_key", "")), str(form.get("secret", ""))
        if not key or not secret:
            return _html(render.login("Give an access key and a secret."), 401)
        tried = keys_of(request.remote or "", key)
        wait = self.throttle.wait_s(tried)
        if wait:
            refused = _html(render.login(f"Too many wrong secrets: try again in {math.ceil(wait)} s."), 429)
            refused.headers["Retry-After"] = str(math.ceil(wait))
            return refused
        user = Credentials(key, secret)
        try:
            await Admin(self.admin(), user).cluster()
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                self.throttle.failed(tried)
                return _html(render.login("Wrong access key or secret."), 401)
            if e.code() != grpc.StatusCode.PERMISSION_DENIED:  # refused the call: the secret is right
                raise
        self.throttle.succeeded(tried)
        cookie, _ = self.sessions.open(user)
        response = web.HTTPSeeOther("/ui/")
        response.set_cookie(COOKIE, cookie, path="/ui/", httponly=True, samesite="Strict", secure=self.tls,
                            max_age=int(self.sessions.ttl_s))
        raise response

    async def logout(self, request: web.Request, v: Viewer) -> web.StreamResponse:
        self.sessions.close(request.cookies.get(COOKIE, ""))
        response = web.HTTPSeeOther("/ui/login")
        response.del_cookie(COOKIE, path="/ui/")
        raise response

    def guarded(self, page: Page, change: bool = False) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """`page` for a viewer: with auth, a logged-in one (else 401 and the login form), and for a change
        (a POST) the session's CSRF token in the form (else 403); its failures as pages that say why."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            viewer = Viewer(Admin(self.admin()))
            browser = request.cookies.get(actions.BROWSER_COOKIE, "")
            if change and not (self.auth or self.ui_admin):
                return _html(render.page("Refused", render.error(actions.READ_ONLY)), 403)
            if change and not _same_origin(request):
                return _html(render.page("Refused", render.error("Change things from this dashboard's own pages.")), 403)
            if not self.auth and self.ui_admin:
                token = self.browsers.token(browser)
                if change and not (token and hmac.compare_digest(str((await request.post()).get("csrf", "")), token)):
                    return _html(render.page("Refused", render.error("The form is stale: reload the page.")), 403)
                browser = browser or self.browsers.new_cookie()
                viewer = Viewer(viewer.admin, changes=True, token=self.browsers.token(browser))
            if self.auth:
                session = self.session(request)
                if session is None:
                    return _html(render.login(), 401)
                if change and (await request.post()).get("csrf") != session.csrf:
                    return _html(render.page("Refused", render.error("The form is stale: reload the page."),
                                             session.csrf), 403)
                viewer = Viewer(Admin(self.admin(), session.user), session.csrf, True, session.csrf)
                self.authorization = "Basic " + base64.b64encode(
                    f"{session.user.access_key}:{session.user.secret_key}".encode()).decode()
            try:
                response = await page(request, viewer)
                if viewer.token and not self.auth and browser != request.cookies.get(actions.BROWSER_COOKIE):
                    response.set_cookie(actions.BROWSER_COOKIE, browser, path="/ui/", httponly=True,
                                        samesite="Strict", secure=self.tls)
                return response
            except web.HTTPException:
                raise
            except grpc.aio.AioRpcError as e:
                status, title = _STATUS.get(e.code(), (502, "The broker did not answer"))
                return _html(render.page(title, render.error(e.details() or e.code().name), viewer.csrf), status)
            except Exception:
                log.exception("dashboard page %s", request.path)
                return _html(render.page("Error", render.error("The page failed: the broker's log says why."),
                                         viewer.csrf), 500)

        return guarded


def _listing_query(request: web.Request) -> tuple[str, int]:
    """?filter= and ?page= of a list page (a page that is not a number: the first)."""
    page = request.query.get("page", "1")
    return request.query.get("filter", ""), int(page) if page.isdigit() else 1


def _same_origin(request: web.Request) -> bool:
    """A form posted from this host's pages (a browser sends Origin with a POST; none: not a browser's)."""
    origin = request.headers.get("Origin")
    return origin is None or origin == f"{request.scheme}://{request.host}"


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


def add_ui(app: web.Application, admin: Callable[[], admin_grpc.AdminStub], counters: Collect, auth: bool,
           tls: bool = False, ui_admin: bool = False,
           messages: Callable[[], messages_grpc.MessagesStub] | None = None,
           users: Callable[[], users_grpc.UsersStub] | None = None, acls: Callable[[], acl_grpc.AclsStub] | None = None,
           send: Send | None = None, totals: Sample | None = None) -> None:
    """Mount the dashboard under /ui/ of `app`; its Messages pages ask `messages` (the same broker's), its
    Access pages `users` and `acls`; `send` sends a topic page's test message; its charts read `totals` (a
    broker's cheap counters: see ui/live.py)."""
    d = Dashboard(admin, counters, auth, tls, ui_admin, send=send, live=Live(totals))
    for path, page in (("/ui/", d.overview), ("/ui/api/overview", d.overview_api), ("/ui/topics", d.topics),
                       ("/ui/topics/{name}", d.topic), ("/ui/groups", d.groups), ("/ui/groups/{name}", d.group)):
        app.router.add_get(path, d.guarded(page), allow_head=False)
    if messages is not None:
        m = MessagePages(messages)
        app.router.add_get("/ui/messages", d.guarded(m.search), allow_head=False)
        app.router.add_get("/ui/messages/{id}", d.guarded(m.message), allow_head=False)
    app.router.add_get("/ui", _to_overview, allow_head=False)
    app.router.add_get("/ui/login", d.login_form, allow_head=False)
    app.router.add_post("/ui/login", d.login)
    app.router.add_post("/ui/logout", d.guarded(d.logout, change=True))
    actions.add_actions(app, d.guarded)
    if users is not None and acls is not None:
        AccessPages(users, acls, auth).add(app, d.guarded)
    if send is not None:
        SendPage(send).add(app, d.guarded)
    app.router.add_get("/ui/static/{file}", _static, allow_head=False)
    app.cleanup_ctx.append(d.sampling)
    app.cleanup_ctx.append(d.live.sampling)


async def _to_overview(request: web.Request) -> web.Response:
    raise web.HTTPFound("/ui/")


async def _static(request: web.Request) -> web.StreamResponse:
    """The one stylesheet and one script, open to all: no data in them (no directory listing, no path
    outside static/)."""
    path = STATIC / request.match_info["file"]
    if path.parent != STATIC or path.suffix not in (".css", ".js") or not path.is_file():
        raise web.HTTPNotFound()
    return web.FileResponse(path)
