"""Test certificates, made in the test (trustme): a CA and a server certificate for 127.0.0.1 and
localhost, written as PEM files. Nothing of it is committed."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class CertFiles:
    ca: Path  # the CA certificate clients verify against
    cert: Path  # the server's certificate chain
    key: Path  # ... and its private key

    def serve_args(self) -> list[str]:
        return ["--tls-cert", str(self.cert), "--tls-key", str(self.key)]


def make_certs(directory: Path, name: str = "server") -> CertFiles:
    """A new CA and a server certificate it signed, in `directory` (NAME-ca.pem, NAME.pem, NAME.key)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    files = CertFiles(directory / f"{name}-ca.pem", directory / f"{name}.pem", directory / f"{name}.key")
    ca.cert_pem.write_to_path(str(files.ca))
    issued.private_key_pem.write_to_path(str(files.key))
    files.cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    return files


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
