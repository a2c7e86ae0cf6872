"""The machine-readable ready signal of `rockmq serve` and `rockmq namesrv` (`--ready-file PATH`).

Once the server accepts connections it writes `HOST:PORT` (the port it really got, which port 0
leaves to the system) to PATH. The file appears whole or not at all (written beside it, then
renamed: whole_file.py, which never follows a link planted beside it), so a supervisor or a test
can wait for it to exist and read it without parsing logs.
"""

from __future__ import annotations

from pathlib import Path

from rockmq.whole_file import replace_whole


def write_ready_file(path: str | Path, host: str, port: int) -> None:
    replace_whole(Path(path), f"{host}:{port}\n".encode())
