"""Messages that reach a group's dead-letter topic the way real ones do: received and never
acknowledged, with a short invisible time, until the group's max attempts ran out."""

from __future__ import annotations

from mqwire import RPC_TIMEOUT, Conn, message
from waiting import wait_for

from rockmq.protocol import admin


def dead_letters(conn: Conn, group: str) -> list[admin.DeadLetter]:
    """The group's dead letters as ListDeadLetters answers (every broker of a cluster)."""
    return list(conn.admin.ListDeadLetters(admin.DlqListRequest(group=group), timeout=RPC_TIMEOUT).messages)


def make_dead_letters(conn: Conn, topic: str, group: str, bodies: list[str], keys: tuple[str, ...] = ()) -> list[str]:
    """Send `bodies` to `topic` and let `group` (made with max attempts 2 unless it exists) fail them
    into its dead-letter topic -> their message ids, in the order sent."""
    if group not in conn.group_names():
        conn.create_group(group, max_attempts=2)
    ids = [e.message_id for e in conn.send_ok(*(message(topic, b, keys=keys) for b in bodies))]

    def failed_all() -> bool:
        conn.receive(group, topic, batch=32, invisible_ms=100, poll_s=0.2)  # never acknowledged
        return {d.message_id for d in dead_letters(conn, group)} >= set(ids)

    wait_for(failed_all, timeout=20, what=f"{len(ids)} messages of {topic} in the dead-letter topic of {group}")
    return ids
