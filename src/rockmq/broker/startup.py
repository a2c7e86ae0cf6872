"""What `rockmq serve` checks before it touches the data directory, so that an ordinary mistake
(the port in use, an address not of this machine, a data directory that is a file or that another
broker holds) is refused with one line saying why and leaves nothing behind."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
from pathlib import Path

from rockmq.whole_file import DIRECTORY_MODE

log = logging.getLogger(__name__)


class CannotStart(Exception):
    """The broker cannot start; the message is the one line to show."""


def check_can_listen(host: str, port: int, flag: str = "") -> None:
    """Bind `host:port` once, as the gRPC server will (SO_REUSEADDR), and let it go again (`flag`:
    the option that named the port, said in the refusal)."""
    where = f"{host}:{port}" + (f" ({flag})" if flag else "")
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
    """The data directory is a directory (or does not exist yet) that no other process holds, and
    its user's alone (keep_private). RocksDB holds its directory with an fcntl lock on the file
    LOCK: we test that lock the same way."""
    if path.exists() and not path.is_dir():
        raise CannotStart(f"the data directory {path} is a file, not a directory")
    if path.is_dir():
        keep_private(path)
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
        _lock(fd, path)
    finally:
        os.close(fd)  # releases the lock (if we got it) before RocksDB takes it


def hold_data_dir(path: Path) -> int:
    """Lock the data directory the way RocksDB does (an fcntl lock on LOCK) for a process that
    keeps no store in it itself (`rockmq serve --workers N`) -> the descriptor to keep open.
    Refusals are worded as a single broker's (store/db.py), each naming the directory and the cause."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    except OSError as e:
        raise CannotStart(f"cannot make the data directory {path}: {e.strerror}") from None
    try:
        fd = os.open(path / "LOCK", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise CannotStart(f"cannot open the store in {path}: {e.strerror}") from None
    try:
        _lock(fd, path)
    except CannotStart:
        os.close(fd)
        raise
    return fd


def keep_private(path: Path) -> None:
    """Take the group's and others' bits off an existing data directory (0755 -> 0700), saying so in one line.

    It holds every message body, the receipt-handle secret, users.json and acl.json. A broker now
    makes it 0700 and its files 0600 (umask 077, cli/servers.py), but one made before (0755, RocksDB's
    files 0644) would stay open to every local user: tightening the directory closes all of it at
    once (nobody else can enter it to reach the files). A directory the broker may not chmod (not
    its own) is left as it is, with a warning: starting matters more than the mode."""
    mode = path.stat().st_mode & 0o777
    private = mode & DIRECTORY_MODE  # the owner's bits as they were: a read-only directory stays read-only
    if mode == private:
        return
    try:
        path.chmod(private)
    except OSError as e:
        log.warning("the data directory %s is mode %o, so other local users may read it; cannot make it %o: %s",
                    path, mode, private, e.strerror)
        return
    log.warning("the data directory %s was mode %o, so other local users could read it: made it %o", path, mode, private)


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise CannotStart(f"the data directory {path} is in use by another process (another broker?)") from None


SHARD_PREFIX = "shard-"  # `rockmq serve --workers N` keeps shard i's store in DATA/shard-i


def shard_dir(root: Path, index: int) -> Path:
    return root / f"{SHARD_PREFIX}{index}"


def stored_shards(root: Path) -> int:
    """How many shards the data directory holds (1 + the highest shard-i present; 0: none)."""
    if not root.is_dir():
        return 0
    indexes = [int(p.name[len(SHARD_PREFIX):]) for p in root.iterdir()
               if p.is_dir() and p.name.startswith(SHARD_PREFIX) and p.name[len(SHARD_PREFIX):].isdigit()]
    return max(indexes, default=-1) + 1


def check_layout(root: Path, shards: int) -> None:
    """The data directory was written by as many shards as will read it, or fewer: a store left
    unopened would hide its messages, and a single broker's store is not a shard's."""
    held = stored_shards(root)
    if held > shards or (held and shards == 1):
        raise CannotStart(f"the data directory {root} holds {held} shards (written by rockmq serve --workers {held}): "
                          f"start it with --workers {held} or more, or its messages stay unread")
    if shards > 1 and (root / "CURRENT").exists():
        raise CannotStart(f"the data directory {root} holds a single broker's store (written without --workers): "
                          f"start it with --workers 1")
