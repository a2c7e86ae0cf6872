"""`rockmq serve --workers N`: N broker shard processes on one machine, joined as a cluster.

Python runs one core per process (docs/architecture.md §7), so every core needs its own broker.
Each shard is an ordinary `rockmq serve` (`--workers 1`) with its own store, DATA/shard-i, its own
port and the name `<broker_name>-i`; shard 0 listens on `--port`. They register with a name server
this process embeds, exactly as brokers of a cluster do, so the listener on `--port` answers routes
with the queues of every shard and clients spread over them as over brokers; `rockmq topic create`
through it spreads the queues (docs/cluster.md).

This process only supervises: it hands the settings it resolved to the shards (as `ROCKMQ_*`
variables; their flags name what differs), restarts a shard that dies on the same port (see
`restarts`), writes `--ready-file` once every shard serves and is registered, and on SIGTERM or
SIGINT drains them all at once (each shard drains as a broker does: broker/server.py, Broker.drain)
while its name server stays up to hear them unregister. The shards run in their own session, so a Ctrl-C reaches them through this
process only, and on Linux each gets SIGTERM should this process die without stopping them
(`shard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from secrets import token_urlsafe

from prometheus_client import CollectorRegistry, ProcessCollector

from rockmq.auth.inner import inner_user
from rockmq.broker.dashboard_send import sender
from rockmq.broker.startup import CannotStart, check_can_listen, check_data_dir, check_layout, hold_data_dir, shard_dir
from rockmq.config import Settings, to_environ
from rockmq.http.app import make_app
from rockmq.http.port import CannotServe, HttpPort
from rockmq.namesrv.metrics import NameServerMetrics
from rockmq.namesrv.registry import Registry
from rockmq.namesrv.server import NameServer, start
from rockmq.plumbing.connection_limits import raise_fd_limit
from rockmq.plumbing.ready_file import write_ready_file
from rockmq.plumbing.stop_signals import stop_event
from rockmq.plumbing.tls import server_credentials
from rockmq.protocol import acl_grpc, users_grpc
from rockmq.protocol.shards import shard_name
from rockmq.ui.routes import add_ui
from rockmq.workers.dashboard import serving_endpoint, shard_admin, shard_messages, shard_stub
from rockmq.workers.metrics import ShardScrapes, Source
from rockmq.workers.restarts import GiveUp, Restarts

log = logging.getLogger(__name__)
STOP_MARGIN_S = 5.0  # a shard asked to stop drains (drain_timeout_s), and gets this long more before it is killed
POLL_S = 0.05
LOOPBACK = "127.0.0.1"


class Process:
    """A shard process, started by posix_spawn in a session of its own (`shard` says why)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid = os.posix_spawn(argv[0], argv, env, setsid=True)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """Its exit code (negative: the signal that ended it) once it ended, else None."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    async def wait(self) -> int:
        while (code := self.poll()) is None:
            await asyncio.sleep(POLL_S)
        return code

    def signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)


@dataclass
class Shard:
    index: int
    name: str
    data_dir: Path
    port: int  # 0 until it first serves (unless --port named one); a restart reuses it
    ready_file: Path
    restarts: Restarts
    proc: Process | None = None
    serving_since: float | None = None  # monotonic; None while it starts
    started_ms: int = 0
    http_port: int = 0  # with --http-port: its own, which the supervisor's asks (workers/metrics.py); kept across restarts


def _how_it_ended(code: int) -> str:
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"


class Supervisor:
    def __init__(self, settings: Settings, namesrv: str, registry: Registry, ready_dir: Path) -> None:
        self.settings = settings
        self.namesrv = namesrv
        self.registry = registry
        self.environ = {**os.environ, **to_environ(settings.shard_settings())}
        names = [shard_name(settings.broker_name, i) for i in range(settings.shards)]
        self.shards = [Shard(i, name, shard_dir(settings.data_path, i), settings.port if i == 0 else 0,
                             ready_dir / name, Restarts(name)) for i, name in enumerate(names)]

    def _command(self, shard: Shard, port: int) -> list[str]:
        # With TLS each shard listens as --port does; a plaintext listener beside it on --plaintext-port
        # for shard 0, any free port for the others (routes name them).
        plaintext = self.settings.plaintext_port
        beside = ["--plaintext-port", str(plaintext if shard.index == 0 else 0)] if plaintext >= 0 else []
        if self.settings.http_port >= 0:
            beside += ["--http-port", str(shard.http_port)]
        return [sys.executable, "-m", "rockmq.workers.shard", str(os.getpid()), "serve", "--workers", "1",
                "--host", self.settings.host, "--port", str(port), "--data-dir", str(shard.data_dir), "--broker-name", shard.name,
                "--namesrv", self.namesrv, "--ready-file", str(shard.ready_file), *beside]

    async def _spawn(self, shard: Shard) -> None:
        port = shard.port
        if shard.index and port:  # its old port, unless something took it meanwhile (shard 0's is --port)
            try:
                check_can_listen(self.settings.host, port)
            except CannotStart:
                port = 0
        if self.settings.http_port >= 0:
            shard.http_port = _free_port(self.settings.host, shard.http_port)
        shard.ready_file.unlink(missing_ok=True)
        shard.serving_since = None
        shard.started_ms = int(time.time() * 1000)
        shard.proc = Process(self._command(shard, port), self.environ)
        log.info("shard %s started (pid %d, data in %s)", shard.name, shard.proc.pid, shard.data_dir)

    def _registered(self, shard: Shard) -> bool:
        endpoint = f"{self.settings.host}:{shard.port}"
        return any(b.name == shard.name and b.endpoint == endpoint and b.last_seen_ms >= shard.started_ms
                   for b in self.registry.brokers())

    async def _until_serving(self, shard: Shard) -> bool:
        """Wait until the shard serves and routes name it -> False if it exited first."""
        assert shard.proc is not None
        while True:
            if shard.proc.poll() is not None:
                return False
            if shard.ready_file.exists():
                shard.port = int(shard.ready_file.read_text().rsplit(":", 1)[1])
                if self._registered(shard):
                    break
            await asyncio.sleep(POLL_S)
        shard.serving_since = time.monotonic()
        return True

    async def _watch(self, shard: Shard) -> None:
        """Restart the shard whenever it dies, after the wait `restarts` decides (GiveUp ends it)."""
        while True:
            assert shard.proc is not None
            code = await shard.proc.wait()
            served = None if shard.serving_since is None else time.monotonic() - shard.serving_since
            delay = shard.restarts.next_delay(served)
            log.warning("shard %s (pid %d) %s; restarting it in %.1f s (restart %d)", shard.name, shard.proc.pid,
                        _how_it_ended(code), delay, shard.restarts.crashes)
            await asyncio.sleep(delay)
            await self._spawn(shard)
            if await self._until_serving(shard):
                log.info("shard %s serving again on %s:%d", shard.name, self.settings.host, shard.port)

    async def run(self, stop: asyncio.Event, ready_file: str | None) -> None:
        """Start every shard, keep them running until `stop`, then stop them all."""
        try:
            await self._run(stop, ready_file)
        finally:
            await self._stop_all()

    async def _run(self, stop: asyncio.Event, ready_file: str | None) -> None:
        for shard in self.shards:
            await self._spawn(shard)
        starting = asyncio.gather(*(self._until_serving(s) for s in self.shards))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait((starting, stopped), return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set():
            starting.cancel()
            return
        stopped.cancel()
        failed = [s.name for s, ok in zip(self.shards, starting.result()) if not ok]
        if failed:
            raise CannotStart(f"shard {failed[0]} did not start (its error is above)")
        s = self.settings
        where = ", ".join(f"{x.name} on {s.host}:{x.port}" for x in self.shards)
        print(f"rockmq serving {len(self.shards)} shards on {s.host}:{self.shards[0].port} "
              f"(data in {s.data_dir}, flush {s.flush}): {where}", flush=True)
        if ready_file:
            write_ready_file(ready_file, s.host, self.shards[0].port)
        watchers = [asyncio.create_task(self._watch(x)) for x in self.shards]
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait((*watchers, stopped), return_when=asyncio.FIRST_COMPLETED)
            for w in watchers:
                if w.done() and isinstance(w.exception(), GiveUp):
                    raise CannotStart(str(w.exception()))
        finally:
            for task in (*watchers, stopped):
                task.cancel()

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(s) for s in self.shards if s.proc is not None))

    async def _stop(self, shard: Shard) -> None:
        proc = shard.proc
        assert proc is not None
        proc.signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(proc.wait(), self.settings.drain_timeout_s + STOP_MARGIN_S)
        except TimeoutError:
            log.error("shard %s (pid %d) did not stop within %.0f s: killing it", shard.name, proc.pid,
                      self.settings.drain_timeout_s + STOP_MARGIN_S)
            proc.signal(signal.SIGKILL)
            code = await proc.wait()
        log.info("shard %s %s", shard.name, "stopped" if code == 0 else _how_it_ended(code))


def _free_port(host: str, wanted: int) -> int:
    """`wanted` if it can be listened on still, else a free port of `host` (free now: the shard binds it
    a moment later, as a restarted shard's gRPC port)."""
    if wanted:
        try:
            check_can_listen(host, wanted)
            return wanted
        except CannotStart:
            pass
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _reach(host: str) -> str:
    """Where the supervisor reaches a shard listening on `host` (a wildcard: on loopback)."""
    return LOOPBACK if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host


async def _http_port(settings: Settings, supervisor: Supervisor, registry: Registry) -> HttpPort:
    """The one HTTP port of the shards (workers/metrics.py): their series, each labelled with its shard, and
    their readiness; and the dashboard of them all (workers/dashboard.py)."""
    own = CollectorRegistry(auto_describe=False)
    own.register(NameServerMetrics(registry))
    ProcessCollector(registry=own)
    scheme = "https" if settings.tls_cert else "http"

    def sources() -> list[Source]:
        return [Source(x.name, f"{scheme}://{_reach(settings.host)}:{x.http_port}") for x in supervisor.shards]

    scrapes = ShardScrapes(sources, own, settings.auth_enabled, settings.tls_ca if settings.tls_cert else None)
    def endpoints() -> list[tuple[str, bool]]:
        return [(f"{_reach(settings.host)}:{x.port}", x.serving_since is not None) for x in supervisor.shards]

    app = make_app(scrapes.render, scrapes.reasons)
    add_ui(app, shard_admin(settings, endpoints), scrapes.render, settings.auth_enabled, bool(settings.tls_cert),
           settings.ui_admin, messages=shard_messages(settings, endpoints),
           users=shard_stub(settings, endpoints, users_grpc.UsersStub),
           acls=shard_stub(settings, endpoints, acl_grpc.AclsStub),
           send=sender(lambda: serving_endpoint(endpoints()), settings.client_tls))
    http = HttpPort(app)
    try:
        await http.start(settings.host, settings.http_port, settings.tls_cert, settings.tls_key)
    except CannotServe as e:
        raise CannotStart(str(e)) from None
    print(f"rockmq HTTP port on {scheme}://{settings.host}:{http.port} (/metrics, /healthz, /readyz of every shard; "
          f"the dashboard at /ui/)", flush=True)
    return http


async def serve(settings: Settings, ready_file: str | None = None) -> None:
    """Run `settings.shards` shards until SIGTERM or SIGINT (CannotStart: refused, or a shard gave up)."""
    stop = stop_event()
    raise_fd_limit()  # the shards inherit it; before the name server's connection limit is sized from it
    root = settings.data_path
    check_can_listen(settings.host, settings.port)  # before the data directory is made or opened
    if settings.http_port > 0:
        check_can_listen(settings.host, settings.http_port, "--http-port")
    check_data_dir(root)
    check_layout(root, settings.shards)
    lock = hold_data_dir(root)
    if settings.auth_enabled and not settings.inner_access_key:  # the shards' own, for their calls to each other
        settings = dataclasses.replace(settings, inner_access_key="rockmq-shards", inner_secret_key=token_urlsafe(32))
    # A shard silent for three registrations drops out of routes until it registers again.
    service = NameServer(int((3 * settings.namesrv_interval_s + 1) * 1000))
    # With TLS the shards reach it as they reach each other and clients reach them: over TLS, at
    # --host, with the broker's certificate (verified against --tls-ca); else on loopback.
    host = settings.host if settings.tls_cert else LOOPBACK
    server, port = await start(service, host, 0, settings.connection_limits,
                               server_credentials(settings.tls_cert, settings.tls_key), inner_user(settings))
    namesrv = ",".join([f"{host}:{port}", *(a.strip() for a in settings.namesrv.split(",") if a.strip())])
    http = None
    try:
        with tempfile.TemporaryDirectory(prefix="rockmq-shards-") as ready_dir:
            supervisor = Supervisor(settings, namesrv, service.registry, Path(ready_dir))
            if settings.http_port >= 0:
                http = await _http_port(settings, supervisor, service.registry)
            await supervisor.run(stop, ready_file)
    finally:
        log.info("stopping")
        if http is not None:
            await http.stop()
        await server.stop(grace=1)
        os.close(lock)
