"""One group, one way of consuming.

A group read both by POP (ReceiveMessage, batch Receive: the broker keeps the position and the
in-flight deliveries) and by offsets (PullMessage, batch Pull, UpdateOffset: the consumers keep
the position and commit it) would keep two positions and get every message twice. So the first
way a group is used (or the one `rockmq group create --consume-mode` gives) sticks, stored in the
group's config, and the other way is refused with FORBIDDEN naming the group's mode. A group
created before modes existed has none and gets one on first use.
"""

from __future__ import annotations

from rockmq.broker.metadata import OFFSET, POP, GroupConfig, Metadata
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

_STYLE = {
    POP: "POP consumption (ReceiveMessage: SimpleConsumer, PushConsumer in pop mode, message tail)",
    OFFSET: "offset-based consumption (PullMessage, Pull, UpdateOffset: PushConsumer in clustering or broadcast mode, "
            "PullConsumer)",
}


def refusal(group: GroupConfig, mode: str) -> BrokerError | None:
    """Why `group` may not be consumed in `mode` (None: it may). Pure."""
    if not group.consume_mode or group.consume_mode == mode:
        return None
    return BrokerError(pb.FORBIDDEN, f"consumer group {group.name!r} has consume mode {group.consume_mode!r}: "
                                     f"it takes no {_STYLE[mode]}; use another group for that")


def claim(meta: Metadata, group: GroupConfig, mode: str, read_only: bool = False) -> None:
    """Consume `group` in `mode`: refused with FORBIDDEN if it has the other mode; the mode is
    stored on the group's first use (a replica stores nothing: it only checks)."""
    if group.consume_mode == mode:
        return
    refused = refusal(group, mode)
    if refused is not None:
        raise refused
    if not read_only:
        meta.set_consume_mode(group, mode)

