"""A file replaced whole, never through a link someone planted (the ready file, users.json, acl.json);
and files only the broker's user may read (users' secrets, grants: `write_private`, `read_private`).

The new content goes to a temporary file beside the target, made by `tempfile.mkstemp`: a name
nobody can guess, opened O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600, so a symlink or file planted
there is never followed, truncated or written. It is then renamed over the target (a rename
replaces a link at the target itself, not what the link points to): a reader sees the old file
or the new one, never half of one. Issue 32 §12: the ready file used to be written at a name known
in advance (`.NAME.PID.tmp`) opened without O_EXCL, and a local user's symlink there made the
server overwrite any file its user could write.

A private file is one of those, durable (the file and its directory fsync'ed before the call
returns: a crash leaves the old file or the new one), in a directory made 0700, and made 0600 again
when read if someone widened it: a secret is never readable by others, not even for a moment.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

MODE = 0o600
DIRECTORY_MODE = 0o700  # a data directory made here is its user's alone, as `rockmq serve` makes it


def replace_whole(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write `data` as `path` (mode 0600). `durable`: the file and its directory are fsync'ed before
    it returns, so a crash cannot leave an empty or half-written file where the old one was."""
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    if durable:
        fsync_path(path.parent)


def fsync_path(path: Path) -> None:
    """fsync a file, or a directory: its entries (files made, renamed or removed) made durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
    replace_whole(path, data, durable=True)


def read_private(path: Path) -> bytes | None:
    """The file's bytes, None if it does not exist; it is made 0600 again if someone widened it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        os.chmod(path, MODE)
    return data
