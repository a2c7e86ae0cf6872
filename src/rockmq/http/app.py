"""The HTTP port's routes over collaborators the server hands in: what a scrape answers, what
readiness waits for and who may scrape. aiohttp answers unknown paths 404 and wrong methods 405.
A later page (the dashboard) adds its routes to the app this returns."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

# A refusal of a scrape: None (admitted) or the reply's status and text. Takes the request's
# Authorization header ("" if none) and its peer's address.
Admit = Callable[[str, str], tuple[int, str] | None]
# Why the server is not ready (empty: ready); a server of shards asks them (awaitable).
Ready = Callable[[], list[str] | Awaitable[list[str]]]
# A scrape's Prometheus text, or why not (status, text); takes the request's Authorization header
# (a server of shards hands it on to them).
Render = Callable[[str], Awaitable[bytes | tuple[int, str]]]
# The same as metric families, for a reader in the process (the dashboard): no text to render and parse back.
Collect = Callable[[str], Awaitable[Iterable[Metric] | bytes | tuple[int, str]]]


def _admit_all(authorization: str, peer: str) -> tuple[int, str] | None:
    return None


def rendering(registry: CollectorRegistry, refresh: Callable[[], Awaitable[None]] | None = None) -> Render:
    """A scrape of `registry`'s collectors, after `refresh` (what is computed apart from the scrape,
    handing the loop back as it goes)."""

    async def render(authorization: str) -> bytes:
        if refresh is not None:
            await refresh()
        return generate_latest(registry)

    return render


def collecting(registry: CollectorRegistry, refresh: Callable[[], Awaitable[None]] | None = None) -> Collect:
    """`rendering`'s families, not their text: with 1,000 groups the text's rendering and parsing took
    most of the dashboard's reading of the counters (~250 of ~400 ms)."""

    async def collect(authorization: str) -> list[Metric]:
        if refresh is not None:
            await refresh()
        return list(registry.collect())

    return collect


def make_app(render: Render, ready: Ready, admit: Admit = _admit_all) -> web.Application:
    """GET /metrics (`render`), /healthz (200 while the process answers), /readyz (200, or 503 with
    the reasons one a line); only /metrics is admitted by `admit`."""

    async def metrics(request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization", "")
        answer = admit(authorization, request.remote or "") or await render(authorization)
        if isinstance(answer, bytes):
            return web.Response(body=answer, headers={"Content-Type": CONTENT_TYPE_LATEST})
        status, text = answer
        headers = {"WWW-Authenticate": 'Basic realm="rockmq"'} if status == 401 else None
        return web.Response(status=status, text=text.rstrip("\n") + "\n", headers=headers)

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        reasons = ready()
        if inspect.isawaitable(reasons):
            reasons = await reasons
        if reasons:
            return web.Response(status=503, text="".join(f"{r}\n" for r in reasons))
        return web.Response(text="ready\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics, allow_head=False)
    app.router.add_get("/healthz", healthz, allow_head=False)
    app.router.add_get("/readyz", readyz, allow_head=False)
    return app
