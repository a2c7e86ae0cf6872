"""Producers that keep sending through a broker in a thread of their own, for chaos tests that kill
brokers under them: rockmq's producer and the official Python one, each with its own retries, each
keeping what was acknowledged and when."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import grpc
from mqwire import Conn, message

from rockmq.client import AsyncProducer, Message
from rockmq.protocol import pb

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from official_client import producer, send  # noqa: E402


def send_batches(endpoint: str, topic: str, acked: list[str], stop: threading.Event,
                 threads: int = 4) -> list[threading.Thread]:
    """`threads` senders of 4 messages a request over the wire, each until `stop` or until the
    broker is gone, the ids acknowledged added to `acked`; -> the started threads."""
    def sender(n: int) -> None:
        c = Conn(endpoint)
        i = 0
        try:
            while not stop.is_set():
                try:
                    reply = c.send(*(message(topic, f"{n}-{i}-{j}") for j in range(4)))
                except grpc.RpcError:
                    return  # the broker is gone
                acked.extend(e.message_id for e in reply.entries if e.status.code == pb.OK)
                i += 1
        finally:
            c.close()

    started = [threading.Thread(target=sender, args=(n,)) for n in range(threads)]
    for t in started:
        t.start()
    return started


class Sending:
    """rockmq's producer sending one message after another to `topic` through `endpoint`."""

    def __init__(self, endpoint: str, topic: str, request_timeout: float = 2.0) -> None:
        self.acked: list[tuple[float, str]] = []  # (when, message id)
        self.failed: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(endpoint, topic, request_timeout),))
        self._thread.start()

    async def _run(self, endpoint: str, topic: str, request_timeout: float) -> None:
        async with AsyncProducer(endpoint, request_timeout=request_timeout) as p:
            i = 0
            while not self._stop.is_set():
                try:
                    self.acked.append((time.monotonic(), (await p.send(Message(topic, f"r{i}".encode()))).message_id))
                except Exception as e:  # noqa: BLE001 - counted: the test judges when sends succeed again
                    self.failed.append((time.monotonic(), repr(e)))
                    await asyncio.sleep(0.05)
                i += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class OfficialSending:
    """The official Python producer sending one message after another to `topic` through `endpoint`."""

    def __init__(self, endpoint: str, topic: str) -> None:
        self.acked: list[tuple[float, str]] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(endpoint, topic))
        self._thread.start()

    def _run(self, endpoint: str, topic: str) -> None:
        with producer(endpoint, topic) as p:
            i = 0
            while not self._stop.is_set():
                try:
                    self.acked.append((time.monotonic(), send(p, topic, f"o{i}".encode()).message_id))
                except Exception:  # noqa: BLE001 - counted: the test judges when sends succeed again
                    self.failed += 1
                    time.sleep(0.2)
                i += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
