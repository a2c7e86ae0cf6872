"""The machine-readable ready signal of `rockmq serve` and `rockmq namesrv` (`--ready-file PATH`).

Once the server accepts connections it writes `HOST:PORT` (the port it really got, which port 0
leaves to the system) to PATH. The file appears whole or not at all (written beside it, then
renamed), so a supervisor or a test can wait for it to exist and read it without parsing logs.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_ready_file(path: str | Path, host: str, port: int) -> None:
    target = Path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    partial.write_text(f"{host}:{port}\n")
    os.replace(partial, target)
