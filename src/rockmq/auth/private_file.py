"""Files only the broker's user may read (users' secrets, grants): mode 0600, replaced whole.

A write goes to a temporary file beside the target (whole_file.py: an unguessable name, created
0600 without following links), is fsync'ed, renamed over the target and the directory fsync'ed:
a crash leaves the old file or the new one, never half of one, and the secret is never readable
by others, not even for a moment.
"""

from __future__ import annotations

import os
from pathlib import Path

from rockmq.whole_file import replace_whole

MODE = 0o600
DIRECTORY_MODE = 0o700  # a data directory made here is its user's alone, as `rockmq serve` makes it


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
