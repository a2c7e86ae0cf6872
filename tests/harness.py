"""An in-process broker for service-level tests, with shortened timings (like nsq's test helpers).

`BrokerHarness` builds the real `Broker` on 127.0.0.1 port 0 over a temporary data directory
and runs it on an asyncio loop of its own thread, so a test can talk to it through a real gRPC
channel with the plain (blocking) `mqwire.Conn` helpers and still look at the broker's state
directly: `call` runs a function on the broker's loop (no race with the services), `run` runs a
coroutine there. Nothing is mocked. The timings in `FAST` make revive, transaction checks,
retention and the like happen within a test's patience; a test passes its own overrides.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from mqwire import Conn

from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.server import Broker
from rockmq.config import Settings
from rockmq.protocol import pb, records

T = TypeVar("T")
CALL_TIMEOUT_S = 15.0

# Settings a test waits on, made short. The defaults are minutes; here everything is seconds or less.
FAST: dict[str, Any] = {
    "max_attempts": 3,
    "retry_ladder_s": (0.1, 0.2, 0.4),  # what consumers are told to back off
    "fifo_retry_s": 0.1,
    "dedup_window_s": 2,
    "txn_check_first_s": 0.3,
    "txn_check_interval_s": 0.3,
    "txn_check_max": 3,
    "retention_check_s": 0.2,
    "max_long_polling_s": 2.0,
    "auto_renew_invisible_ms": 300,
    "client_silence_s": 1.0,
    "namesrv_interval_s": 0.2,
    "replication_timeout_s": 2.0,
}


class BrokerHarness:
    """The real broker in this process; `start()` it, use `conn`, `stop()` it."""

    def __init__(self, data_dir: Path, **overrides: Any) -> None:
        self.settings = Settings(**{**FAST, "host": "127.0.0.1", "port": 0, "data_dir": str(data_dir), **overrides})
        self.broker: Broker | None = None
        self.port = 0
        self._conn: Conn | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- life ------------------------------------------------------------------------------

    def start(self) -> BrokerHarness:
        self._loop = loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="broker-harness", daemon=True)
        self._thread.start()

        async def boot() -> int:
            self.broker = Broker(self.settings)
            return await self.broker.start()

        try:
            self.port = self.run(boot())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the broker and close its store; the data directory stays for a restart."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.broker is not None:
            self.run(self.broker.stop())
            self.broker = None
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(CALL_TIMEOUT_S)
            self._loop.close()
            self._loop = self._thread = None

    def restart(self, **overrides: Any) -> BrokerHarness:
        """A new broker on the same data directory (what a process restart sees), on a new port."""
        self.stop()
        self.settings = dataclasses.replace(self.settings, **overrides)
        return self.start()

    # --- talking to it ---------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def conn(self) -> Conn:
        """A blocking gRPC connection (messaging + admin stubs), made on first use."""
        if self._conn is None:
            self._conn = Conn(self.endpoint)
        return self._conn

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run a coroutine on the broker's loop and return its result."""
        assert self._loop is not None, "the harness is not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def call(self, fn: Callable[[], T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run a plain function on the broker's loop (between two of its steps) and return its result."""

        async def on_loop() -> T:
            return fn()

        return self.run(on_loop(), timeout)

    # --- looking inside ----------------------------------------------------------------------

    @property
    def services(self) -> Broker:
        assert self.broker is not None, "the harness is not started"
        return self.broker

    def topic(self, name: str) -> TopicConfig | None:
        """The topic as the broker knows it, or None if it was never created."""
        return self.call(lambda: self.services.ctx.meta.topics.get(name))

    def group(self, name: str) -> GroupConfig | None:
        return self.call(lambda: self.services.ctx.meta.groups.get(name))

    def stored(self, topic: str) -> list[pb.Message]:
        """Every message in the topic's queue logs, queue by queue in offset order."""

        def read() -> list[pb.Message]:
            config = self.services.ctx.meta.topics.get(topic)
            if config is None:
                return []
            logs = self.services.ctx.logs
            return [records.decode(bytes(record)) for qid in range(config.queues)
                    for _, record in logs.scan(config.id, qid, logs.min_offset(config.id, qid), 1 << 30)]

        return self.call(read)

    def waiting_receives(self) -> int:
        """Long-polling receives the broker is holding now."""
        return self.call(lambda: self.services.pop.waiting)
