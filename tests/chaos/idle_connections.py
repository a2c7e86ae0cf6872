"""Hold idle HTTP/2 connections to a server, as a careless or hostile client would: a process of its own.

    python idle_connections.py HOST PORT N WATCH_S

Opens N connections, each handshaked (the HTTP/2 preface and SETTINGS, the server's SETTINGS
acknowledged) and then silent. Prints one JSON line once all are opened: `held` (the server
answered with its SETTINGS, and they are still open), `closed_early` (answered, then closed while
the others opened) and `refused` (closed before answering, or not accepted); then waits up
to WATCH_S seconds for the server to close the held ones and prints a second line: `open` (still
open) and `closed_after_s` (since the first line, when the last one closed). Only the standard
library, so it starts fast; a process per few thousand connections keeps each under its own
open-files limit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame
SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
ANSWER_S = 5.0
AT_ONCE = 256  # connects in flight (the server's listen backlog is finite)


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A handshaked connection, or None if the server refused it."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), ANSWER_S)
    except (TimeoutError, OSError):
        return None
    try:
        writer.write(PREFACE + SETTINGS)
        if await asyncio.wait_for(reader.read(4096), ANSWER_S):
            writer.write(SETTINGS_ACK)
            return reader, writer
    except (TimeoutError, OSError):
        pass
    writer.close()
    return None


async def _until_closed(reader: asyncio.StreamReader) -> float:
    try:
        while await reader.read(4096):
            pass
    except OSError:
        pass
    return time.monotonic()


async def main(host: str, port: int, n: int, watch_s: float) -> None:
    gate = asyncio.Semaphore(AT_ONCE)
    held: list[tuple[asyncio.StreamWriter, asyncio.Task[float]]] = []

    async def one() -> None:
        async with gate:
            conn = await _open(host, port)
        if conn is not None:
            held.append((conn[1], asyncio.ensure_future(_until_closed(conn[0]))))

    await asyncio.gather(*(one() for _ in range(n)))
    still = sum(not watch.done() for _, watch in held)
    print(json.dumps({"held": still, "closed_early": len(held) - still, "refused": n - len(held)}), flush=True)
    start = time.monotonic()
    watches = [watch for _, watch in held]
    done, pending = await asyncio.wait(watches, timeout=watch_s) if watches else (set(), set())
    last = max((t.result() for t in done), default=start)
    print(json.dumps({"open": len(pending), "closed_after_s": round(max(0.0, last - start), 2)}), flush=True)
    for t in pending:
        t.cancel()
    for writer, _ in held:
        writer.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
