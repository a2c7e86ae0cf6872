"""A staged message (BatchMessaging.Stage) from its two parts: the v2 Message they make.

Authorization (the topics it checks) and staging (what it keeps) read a chunk with this one
function, so both see the same topic whatever the bytes are.
"""

from __future__ import annotations

from rockmq.protocol import pb
from rockmq.protocol.field_keys import MessageFields
from rockmq.protocol.wire import delimited


def staged_message(system_properties: bytes, contents: bytes) -> pb.Message:
    """`contents` (the message without its system properties) joined with `system_properties`;
    protobuf's DecodeError if they do not make a message."""
    return pb.Message.FromString(contents + delimited(MessageFields.SYSTEM_PROPERTIES, system_properties))
