"""The dashboard's routes on the HTTP port's app (rockmq/http/app.py): each page gathers (gather.py),
models (models.py) and renders (render.py). A failed admin call shows as a message on the page: NOT_FOUND
as 404, any other as 502; never a traceback. With auth on, every /ui/ path answers 401 until the login
exists (docs/dashboard.md): no data is served unauthenticated."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from aiohttp import web

from rockmq.http.app import Render
from rockmq.protocol import admin_grpc
from rockmq.ui import gather, models, render
from rockmq.ui.counters import RateMeter, Reading, read

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
SAMPLE_S = 2.0  # how often the counters are read while someone looks
VIEWED_S = 60.0  # ... that is, while a page or the overview's poll came this recently
# A page reads the counters itself only if none were read this recently (the first view after a while):
# a scrape computes every group's lag, hundreds of ms with 1,000 groups (bench/ui_bench.py).
STALE_S = 3 * SAMPLE_S
LOGIN_NEXT = "the dashboard needs a login when --auth is on, and the login is not built yet: it comes next\n"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Dashboard:
    """Where the admin calls go (`admin`: the broker serving now, or a shard of a `--workers` server) and
    the broker's own counters (`counters`: its /metrics scrape)."""

    admin: Callable[[], admin_grpc.AdminStub]
    counters: Render
    auth: bool
    meter: RateMeter = field(default_factory=RateMeter)
    viewed: float = 0.0

    async def sample(self) -> None:
        answer = await self.counters("")
        if isinstance(answer, bytes):
            self.meter.add(read(answer.decode(), time.monotonic()))

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

    async def overview_model(self) -> models.Overview:
        stub = self.admin()
        cluster = await gather.cluster(stub)
        rate, _ = await self.rates()
        latest = self.meter.latest
        return models.overview(cluster, rate, latest.storage if latest else {}, int(time.time() * 1000))

    async def overview(self, request: web.Request) -> web.Response:
        return _html(render.overview(await self.overview_model()))

    async def overview_api(self, request: web.Request) -> web.Response:
        """What the overview's script polls: the moving numbers."""
        rate, _ = await self.rates()
        return web.json_response({"rate_in": models.format_rate(rate),
                                  "as_of": models.format_time(int(time.time() * 1000))})

    async def topics(self, request: web.Request) -> web.Response:
        stub = self.admin()
        text, number = _listing_query(request)
        page = models.page_of(await gather.topic_names(stub), text, number)
        _, by_topic = await self.rates()
        listed = models.topics(await gather.describe_topics(stub, page.names), by_topic, text, page)
        return _html(render.listing("Topics", "topics", "/ui/topics", listed))

    async def topic(self, request: web.Request) -> web.Response:
        stub = self.admin()
        name = request.match_info["name"]
        info = (await gather.describe_topics(stub, [name]))[0]
        # The groups on the topic, found in the counters (describing every group is a call each), their
        # lag by the admin calls (every broker's).
        reading = await self.reading()
        groups = await gather.describe_groups(stub, sorted(reading.positions.get(name, ())) if reading else [])
        body = (f"<p>{info.queue_count} queues, types {', '.join(info.message_types)}, perm {info.perm or 'rw'}</p>"
                f"<h2>Queues</h2>{render.table('queues', models.queues(info))}"
                f"<h2>Consumer groups</h2>{render.table('groups', models.topic_groups(name, groups))}"
                f"{render.unreachable(list(info.unreachable))}")
        return _html(render.page(f"Topic {name}", body))

    async def groups(self, request: web.Request) -> web.Response:
        stub = self.admin()
        text, number = _listing_query(request)
        page = models.page_of(await gather.group_names(stub), text, number)
        listed = models.groups(await gather.describe_groups(stub, page.names), text, page)
        return _html(render.listing("Groups", "groups", "/ui/groups", listed))

    async def group(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        info = (await gather.describe_groups(self.admin(), [name]))[0]
        body = (f"<p>{'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, consume mode "
                f"{info.consume_mode or 'not set yet'}, {info.inflight:,} msg in flight</p>"
                f"<h2>Lag per queue</h2>{render.table('lag', models.lag(info))}{render.unreachable(list(info.unreachable))}")
        return _html(render.page(f"Group {name}", body))


def _listing_query(request: web.Request) -> tuple[str, int]:
    """?filter= and ?page= of a list page (a page that is not a number: the first)."""
    page = request.query.get("page", "1")
    return request.query.get("filter", ""), int(page) if page.isdigit() else 1


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


def _guarded(auth: bool, handler: Handler) -> Handler:
    """`handler`, refused with auth on, and its failures as pages that say what went wrong."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        if auth:
            return web.Response(status=401, text=LOGIN_NEXT)
        try:
            return await handler(request)
        except grpc.aio.AioRpcError as e:
            status = 404 if e.code() == grpc.StatusCode.NOT_FOUND else 502
            title = "Not found" if status == 404 else "The broker did not answer"
            return _html(render.page(title, render.error(e.details() or e.code().name)), status)
        except Exception:
            log.exception("dashboard page %s", request.path)
            return _html(render.page("Error", render.error("The page failed: the broker's log says why.")), 500)

    return guarded


def add_ui(app: web.Application, admin: Callable[[], admin_grpc.AdminStub], counters: Render, auth: bool) -> None:
    """Mount the dashboard under /ui/ of `app`."""
    d = Dashboard(admin, counters, auth)
    for path, handler in (("/ui/", d.overview), ("/ui/api/overview", d.overview_api), ("/ui/topics", d.topics),
                          ("/ui/topics/{name}", d.topic), ("/ui/groups", d.groups), ("/ui/groups/{name}", d.group)):
        app.router.add_get(path, _guarded(auth, handler), allow_head=False)
    app.router.add_get("/ui", _guarded(auth, _to_overview), allow_head=False)
    app.router.add_get("/ui/static/{file}", _guarded(auth, _static), allow_head=False)
    app.cleanup_ctx.append(d.sampling)


async def _to_overview(request: web.Request) -> web.Response:
    raise web.HTTPFound("/ui/")


async def _static(request: web.Request) -> web.StreamResponse:
    """The one stylesheet and one script (no directory listing, no path outside static/)."""
    path = STATIC / request.match_info["file"]
    if path.parent != STATIC or path.suffix not in (".css", ".js") or not path.is_file():
        raise web.HTTPNotFound()
    return web.FileResponse(path)
