"""How `rockmq serve --workers` names its shards (NAME-0, NAME-1...), and how a list of brokers shows
which of them are shards of one server: the supervisor names them, `rockmq cluster list` and the
dashboard read the names back. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rockmq.protocol import admin


def shard_name(broker_name: str, index: int) -> str:
    return f"{broker_name}-{index}"


def shard_of(name: str) -> tuple[str, int] | None:
    """The server's broker name and the shard's index a `shard_name` was made of (None: no such name)."""
    base, _, index = name.rpartition("-")
    return (base, int(index)) if base and index.isdigit() else None


def shard_labels(brokers: Sequence[admin.ClusterBroker]) -> dict[str, str]:
    """`i of NAME` for each of several brokers named NAME-i on one host, as `rockmq serve --workers`
    names its shards; '-' for a broker of its own."""
    named = {b.name: (parts, b.endpoint.rpartition(":")[0]) for b in brokers if (parts := shard_of(b.name)) is not None}
    servers = Counter((parts[0], host) for parts, host in named.values())
    return {b.name: f"{named[b.name][0][1]} of {named[b.name][0][0]}"
            if b.name in named and servers[named[b.name][0][0], named[b.name][1]] > 1 else "-" for b in brokers}
