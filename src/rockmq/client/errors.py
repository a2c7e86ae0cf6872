"""Every error rockmq's client raises, in one tree. Each says whether retrying may help.

    RockmqError                      base; `.retriable`, `.code` (RocketMQ status code or None)
    ├── ConnectionFailed             the broker could not be reached (retriable)
    │   └── Unimplemented            the broker lacks a method (rockmq's own services elsewhere)
    ├── Timeout                      no answer in time (retriable)
    ├── BrokerRefused                the broker answered with a non-OK status; `.code`, `.status_name`
    │   ├── NotFound                 topic, group, message or offset unknown
    │   ├── IllegalArgument          the request is malformed (bad topic name, body, filter, ...)
    │   └── Throttled                the broker is overloaded or a replica did not confirm (retriable)
    └── ClientClosed                 the producer or consumer was closed

`from_status(code, message)` maps a wire status to its exception through one table, as
aiokafka does: the table is the only place that decides what is retriable.
"""

from __future__ import annotations

from rockmq.protocol import pb


class RockmqError(Exception):
    retriable = False
    code: int | None = None

    def __init__(self, message: str, *, code: int | None = None, retriable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retriable is not None:
            self.retriable = retriable


class ConnectionFailed(RockmqError):
    retriable = True


class Unimplemented(ConnectionFailed):
    retriable = False


class Timeout(RockmqError):
    retriable = True


class BrokerRefused(RockmqError):
    @property
    def status_name(self) -> str:
        try:
            return pb.Code.Name(self.code) if self.code is not None else "UNKNOWN"
        except ValueError:
            return "UNKNOWN"

    def __str__(self) -> str:
        return f"{self.status_name} ({self.code}): {self.message}"


class NotFound(BrokerRefused):
    pass


class IllegalArgument(BrokerRefused):
    pass


class Throttled(BrokerRefused):
    retriable = True


class ClientClosed(RockmqError):
    pass


_NOT_FOUND = {pb.NOT_FOUND, pb.TOPIC_NOT_FOUND, pb.CONSUMER_GROUP_NOT_FOUND, pb.MESSAGE_NOT_FOUND, pb.OFFSET_NOT_FOUND}
_RETRIABLE = {pb.TOO_MANY_REQUESTS, pb.SLAVE_PERSISTENCE_TIMEOUT, pb.MASTER_PERSISTENCE_TIMEOUT, pb.HA_NOT_AVAILABLE,
              pb.PROXY_TIMEOUT, pb.REQUEST_TIMEOUT, pb.INTERNAL_ERROR, pb.INTERNAL_SERVER_ERROR}


def from_status(code: int, message: str) -> BrokerRefused:
    """The exception for a non-OK wire status."""
    if code in _NOT_FOUND:
        return NotFound(message, code=code)
    if code in _RETRIABLE:
        return Throttled(message, code=code)
    if 40000 <= code < 50000:
        return IllegalArgument(message, code=code)
    return BrokerRefused(message, code=code, retriable=code >= 50000)
