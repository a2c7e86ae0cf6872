"""`rockmq cluster list`: the brokers, name servers and `--workers` shards of the cluster a broker is in."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import TYPE_CHECKING

from rockmq.cli.common import REQUEST_TIMEOUT_S, admin_stub, print_json, subcommands, table, with_endpoint, with_json

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.protocol import admin


def register(sub: Subparsers) -> None:
    cluster = subcommands(sub, "cluster", "see the cluster a broker is in", run)
    with_json(with_endpoint(cluster.add_parser("list", help="brokers (and the shards of `serve --workers`) and name servers")))


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    info = admin_stub(args).DescribeCluster(admin.ClusterRequest(), timeout=REQUEST_TIMEOUT_S)
    if args.json:
        print_json(info)
        return 0
    now_ms, shard = int(time.time() * 1000), shards(list(info.brokers))
    table([[b.name, b.endpoint, shard[b.name], "yes" if b.tls else "no", b.epoch, b.topics,
            f"{max(0, now_ms - b.last_seen_ms) / 1000:.1f} s ago" if b.last_seen_ms else "-"] for b in info.brokers],
          ["BROKER", "ENDPOINT", "SHARD", "TLS", "EPOCH", "TOPICS", "LAST_SEEN"])
    if info.name_servers:
        print()
        table([[n.address, "answered" if n.answered else "did not answer"] for n in info.name_servers],
              ["NAME_SERVER", "STATUS"])
    else:
        print(f"\nno name servers: {info.broker} runs standalone")
    return 0


def shards(brokers: list[admin.ClusterBroker]) -> dict[str, str]:
    """`i of NAME` for each of several brokers named NAME-i on one host, as `rockmq serve --workers`
    names its shards; '-' for a broker of its own."""
    from rockmq.workers.supervisor import shard_of

    named = {b.name: (parts, b.endpoint.rpartition(":")[0]) for b in brokers if (parts := shard_of(b.name)) is not None}
    servers = Counter((parts[0], host) for parts, host in named.values())
    return {b.name: f"{named[b.name][0][1]} of {named[b.name][0][0]}"
            if b.name in named and servers[named[b.name][0][0], named[b.name][1]] > 1 else "-" for b in brokers}
