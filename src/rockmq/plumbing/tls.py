"""TLS on rockmq's servers (broker and name server): a listener's certificate, checked at start and
re-read when its files change, and which kind of listener a request came in on.

- Start: `check_files` reads the certificate and key and checks that they belong together (Python's
  `ssl` loads the pair), so a missing, unreadable or mismatched file is one line before anything
  listens; gRPC would only fail each handshake later.
- Reload: gRPC asks `Certificate.fetch` at every TLS handshake; it compares the two files'
  modification times (two stat calls) and hands over the new pair once both read back valid. A
  pair caught half-written is skipped (the old one serves on) until the files change again.
- Transport: `is_tls(context)` tells a request that came in over TLS from a plaintext one (a
  broker with `--plaintext-port` serves both), from gRPC's auth context.
"""

from __future__ import annotations

import logging
import os
import ssl
from pathlib import Path
from typing import Any

import grpc

log = logging.getLogger(__name__)
TRANSPORT_KEY = "transport_security_type"
TLS_TRANSPORT = b"ssl"


class TlsError(ValueError):
    """A certificate, key or CA file is missing, unreadable or does not fit; the message is one line."""


def _read(what: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TlsError(f"cannot read the TLS {what} file {path}: {e.strerror or e}") from None


def check_files(cert: str, key: str) -> tuple[bytes, bytes]:
    """The certificate chain and private key (PEM) of a listener -> (cert, key) as read."""
    chain, private = _read("certificate", cert), _read("key", key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as e:
        raise TlsError(f"the TLS certificate {cert} and key {key} do not make a pair ({e.reason or e})") from None
    except OSError as e:  # changed between the two reads
        raise TlsError(f"cannot read the TLS certificate {cert} or key {key}: {e.strerror or e}") from None
    return chain, private


def check_ca(path: str) -> None:
    """A CA file (PEM) that clients verify servers against: readable and holding a certificate."""
    try:
        ssl.create_default_context(cafile=path)
    except FileNotFoundError:
        raise TlsError(f"cannot read the TLS CA file {path}: no such file") from None
    except (ssl.SSLError, OSError) as e:
        raise TlsError(f"the TLS CA file {path} holds no usable certificate ({e})") from None


class Certificate:
    """A listener's certificate and key files, re-read when they change (see the module's doc)."""

    def __init__(self, cert: str, key: str) -> None:
        self.cert, self.key = cert, key
        self._stamp = self._mtimes()
        self.initial = self._configuration(*check_files(cert, key))

    def _mtimes(self) -> tuple[int, int]:
        try:
            return os.stat(self.cert).st_mtime_ns, os.stat(self.key).st_mtime_ns
        except OSError:  # being replaced: fetch tries again once they are back
            return -1, -1

    @staticmethod
    def _configuration(cert: bytes, key: bytes) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration([(key, cert)])

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """gRPC's question at each handshake: a new configuration, or None to keep the current one."""
        stamp = self._mtimes()
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            pair = check_files(self.cert, self.key)
        except TlsError as e:
            log.warning("TLS certificate not reloaded, the current one stays: %s", e)
            return None
        log.info("TLS certificate reloaded from %s", self.cert)
        return self._configuration(*pair)

    def credentials(self) -> grpc.ServerCredentials:
        # gRPC documents None as 'no change'; its type stubs leave it out.
        return grpc.dynamic_ssl_server_credentials(self.initial, self.fetch)  # type: ignore[arg-type]


def server_credentials(cert: str, key: str) -> grpc.ServerCredentials | None:
    """What a listener is served with: TLS from these files (reloaded when they change), or
    None (plaintext) when no certificate is given."""
    return Certificate(cert, key).credentials() if cert else None


def add_port(server: grpc.aio.Server, address: str, credentials: grpc.ServerCredentials | None) -> int:
    """Bind a listener of `server` at HOST:PORT, TLS with `credentials` -> the port (0: could not bind)."""
    try:
        if credentials is None:
            return server.add_insecure_port(address)
        return server.add_secure_port(address, credentials)
    except RuntimeError:  # taken since the caller checked it
        return 0


def is_tls(context: Any) -> bool:
    """Whether the request of this gRPC servicer context came in over TLS."""
    return TLS_TRANSPORT in context.auth_context().get(TRANSPORT_KEY, ())
