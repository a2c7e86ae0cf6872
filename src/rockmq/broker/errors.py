"""The one exception the broker's services raise for a request they refuse.

It carries the RocketMQ v2 status code the client must see; servicers turn it into a
`status{code, message}` reply (MessagingService) or a gRPC status (Admin).
"""

from __future__ import annotations

from typing import cast

from rockmq.protocol import pb

NOT_FOUND_CODES = frozenset({pb.TOPIC_NOT_FOUND, pb.CONSUMER_GROUP_NOT_FOUND, pb.NOT_FOUND})


def status(code: int, message: str = "OK") -> pb.Status:
    """A RocketMQ `status{code, message}`."""
    return pb.Status(code=cast("pb.Code", code), message=message)


OK = status(pb.OK)


class BrokerError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def not_found(self) -> bool:
        """The topic, group or thing asked about does not exist (here)."""
        return self.code in NOT_FOUND_CODES

    def __repr__(self) -> str:
        return f"BrokerError({pb.Code.Name(self.code)}, {self.message!r})"


class AlreadyExists(BrokerError):
    """Creating a topic or group that exists (the admin service answers ALREADY_EXISTS)."""

    def __init__(self, message: str) -> None:
        super().__init__(pb.BAD_REQUEST, message)
