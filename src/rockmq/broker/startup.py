"""What `rockmq serve` checks before it touches the data directory, so that an ordinary mistake
(the port in use, an address not of this machine, a data directory that is a file or that another
broker holds) is refused with one line saying why and leaves nothing behind."""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path


class CannotStart(Exception):
    """The broker cannot start; the message is the one line to show."""


def check_can_listen(host: str, port: int) -> None:
    """Bind `host:port` once, as the gRPC server will (SO_REUSEADDR), and let it go again."""
    where = f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise CannotStart(f"cannot listen on {where}: unknown host {host!r} ({e.strerror})") from None
    failure: OSError | None = None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(address)
                return
            except OSError as e:
                failure = failure or e
    assert failure is not None  # getaddrinfo answers with at least one address or raises
    reasons = {errno.EADDRINUSE: "the port is in use (another broker?)",
               errno.EADDRNOTAVAIL: f"{host} is not an address of this machine",
               errno.EACCES: "permission denied (ports below 1024 need privileges)"}
    why = reasons.get(failure.errno or 0, failure.strerror or str(failure))
    raise CannotStart(f"cannot listen on {where}: {why}")


def check_data_dir(path: Path) -> None:
    """The data directory is a directory (or does not exist yet) that no other process holds.
    RocksDB holds its directory with an fcntl lock on the file LOCK: we test that lock the same way."""
    if path.exists() and not path.is_dir():
        raise CannotStart(f"the data directory {path} is a file, not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CannotStart(f"cannot make the data directory {path}: {parent} is a file")
            break
    lock = path / "LOCK"
    if not lock.exists():
        return
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError as e:
        raise CannotStart(f"cannot open the data directory {path}: {e.strerror}") from None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise CannotStart(f"the data directory {path} is in use by another process (another broker?)") from None
    finally:
        os.close(fd)  # releases the lock (if we got it) before RocksDB takes it
