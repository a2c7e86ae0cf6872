"""A client's Telemetry stream on the wire, for tests: it opens with one settings command and is
read on a thread, so a test can wait for the broker's commands (settings replies, transaction checks)."""

from __future__ import annotations

import queue
import threading
import time

import grpc

from rockmq.protocol import pb, rpc, svc

CHECK = "recover_orphaned_transaction_command"


def producer_settings(topic: str) -> pb.Settings:
    return pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=topic)]))


class TelemetryStream:
    def __init__(self, stub: svc.MessagingServiceStub, metadata, settings: pb.Settings) -> None:
        self._out: queue.Queue = queue.Queue()
        self.commands: queue.Queue = queue.Queue()
        self._out.put(rpc.TelemetryCommand(settings=settings))
        self._call = stub.Telemetry(iter(self._out.get, None), metadata=metadata, timeout=30)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for command in self._call:
                self.commands.put(command)
        except grpc.RpcError:  # cancelled at close
            pass

    def next(self, within: float, field: str = "") -> rpc.TelemetryCommand | None:
        """The next command (with `field` set, if given) within `within` seconds, else None."""
        deadline = time.monotonic() + within
        while (left := deadline - time.monotonic()) > 0:
            try:
                command = self.commands.get(timeout=left)
            except queue.Empty:
                return None
            if not field or command.HasField(field):
                return command
        return None

    def send(self, command: rpc.TelemetryCommand) -> None:
        self._out.put(command)

    def next_check(self, within: float) -> rpc.TelemetryCommand | None:
        return self.next(within, CHECK)

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()
