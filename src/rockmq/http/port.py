"""Serve an app on host:port, HTTPS with a certificate and key (the gRPC port's PEM files)."""

from __future__ import annotations

import ssl

from aiohttp import web


class CannotServe(Exception):
    """The HTTP port could not listen (the message says where)."""


class HttpPort:
    """An app listening, until `stop`. The certificate is read once at start: the gRPC port re-reads
    its files when they change, this port when the server restarts."""

    def __init__(self, app: web.Application) -> None:
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        self.port = 0  # the port it listens on, once started

    async def start(self, host: str, port: int, tls_cert: str = "", tls_key: str = "") -> int:
        """Listen -> the port it got (0: any free one)."""
        context = None
        if tls_cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_cert, tls_key)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, ssl_context=context, reuse_address=True)
        try:
            await site.start()
        except OSError as e:
            await self.runner.cleanup()
            raise CannotServe(f"cannot listen on {host}:{port} (--http-port): {e.strerror or e}") from None
        self.port = int(self.runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        await self.runner.cleanup()
