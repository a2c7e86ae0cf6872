"""What the servicers read from a request's call: headers and how long a long poll may wait."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from rockmq.plumbing.channels import CLIENT_ID_HEADER
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

DEADLINE_MARGIN_S = 0.5  # a long poll ends this long before the client's deadline

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"  # a servicer method's call (generic in the stubs only)


def header(context: Context, name: str) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == name:
            return str(value)
    return ""


def client_id(context: Context) -> str:
    return header(context, CLIENT_ID_HEADER)


def poll_seconds(asked_s: float | None, cap_s: float, context: Context) -> float:
    """How long a long poll may wait: what the client asked (capped), ending before its deadline."""
    poll = cap_s if asked_s is None else min(cap_s, asked_s)
    remaining = context.time_remaining()
    if remaining is not None:
        poll = min(poll, remaining - DEADLINE_MARGIN_S)
    return max(0.0, poll)


def timestamp_ms(ts: Timestamp) -> int:
    """A request's Timestamp in ms, or BAD_REQUEST for one outside what it may hold (years 1-9999)."""
    try:
        return ts.ToMilliseconds()
    except ValueError as e:
        raise BrokerError(pb.BAD_REQUEST, str(e)) from None
