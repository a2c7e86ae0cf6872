"""Files only the broker's user may read (users' secrets, grants): mode 0600, replaced whole.

A write goes to a temporary file beside the target (created 0600), is fsync'ed, renamed over the
target and the directory fsync'ed: a crash leaves the old file or the new one, never half of one,
and the secret is never readable by others, not even for a moment.
"""

from __future__ import annotations

import os
from pathlib import Path

MODE = 0o600


def write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, MODE)
    try:
        os.fchmod(fd, MODE)  # an old leftover may have had another mode
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(partial, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def read_private(path: Path) -> bytes | None:
    """The file's bytes, None if it does not exist; it is made 0600 again if someone widened it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if path.stat().st_mode & 0o077:
        os.chmod(path, MODE)
    return data
