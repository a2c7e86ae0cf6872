"""How every rockmq server is asked to stop: SIGTERM or SIGINT (Ctrl-C) sets an event that the
server waits on, and it then stops cleanly (a second signal changes nothing)."""

from __future__ import annotations

import asyncio
import signal


def stop_event() -> asyncio.Event:
    """An event that SIGTERM or SIGINT sets; called on the running loop, before the server starts."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
