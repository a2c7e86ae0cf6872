"""The HTTP port's routes over collaborators the server hands in: what a scrape answers, what
readiness waits for and who may scrape. aiohttp answers unknown paths 404 and wrong methods 405."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

# A refusal of a scrape: None (admitted) or the reply's status and text. Takes the request's
# Authorization header ("" if none) and its peer's address.
Admit = Callable[[str, str], tuple[int, str] | None]
Ready = Callable[[], list[str]]  # why the server is not ready; empty: ready


def _admit_all(authorization: str, peer: str) -> tuple[int, str] | None:
    return None


def make_app(registry: CollectorRegistry, ready: Ready, admit: Admit = _admit_all) -> web.Application:
    """GET /metrics (the registry's collectors, computed now), /healthz (200 while the process
    answers), /readyz (200, or 503 with the reasons one a line); only /metrics is admitted by `admit`."""

    async def metrics(request: web.Request) -> web.Response:
        refused = admit(request.headers.get("Authorization", ""), request.remote or "")
        if refused is not None:
            status, text = refused
            headers = {"WWW-Authenticate": 'Basic realm="rockmq"'} if status == 401 else None
            return web.Response(status=status, text=text + "\n", headers=headers)
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        reasons = ready()
        if reasons:
            return web.Response(status=503, text="".join(f"{r}\n" for r in reasons))
        return web.Response(text="ready\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics, allow_head=False)
    app.router.add_get("/healthz", healthz, allow_head=False)
    app.router.add_get("/readyz", readyz, allow_head=False)
    return app
