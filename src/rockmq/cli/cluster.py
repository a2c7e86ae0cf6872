"""`rockmq cluster list`: the brokers, name servers and `--workers` shards of the cluster a broker is in."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from rockmq.cli.common import REQUEST_TIMEOUT_S, admin_stub, print_json, subcommands, table, with_endpoint, with_json

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    cluster = subcommands(sub, "cluster", "see the cluster a broker is in", run)
    with_json(with_endpoint(cluster.add_parser("list", help="brokers (and the shards of `serve --workers`) and name servers")))


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin
    from rockmq.protocol.shards import shard_labels

    info = admin_stub(args).DescribeCluster(admin.ClusterRequest(), timeout=REQUEST_TIMEOUT_S)
    if args.json:
        print_json(info)
        return 0
    now_ms, shard = int(time.time() * 1000), shard_labels(info.brokers)
    table([[b.name, b.endpoint, shard[b.name], "yes" if b.tls else "no", b.epoch, b.topics,
            f"{max(0, now_ms - b.last_seen_ms) / 1000:.1f} s ago" if b.last_seen_ms else "-"] for b in info.brokers],
          ["BROKER", "ENDPOINT", "SHARD", "TLS", "EPOCH", "TOPICS", "LAST_SEEN"])
    replicas = [[r.endpoint, b.name, f"{r.lag_messages} msg", f"{r.lag_seconds:.1f} s"]
                for b in info.brokers for r in b.replicas]
    if replicas:
        print()
        table(replicas, ["REPLICA", "OF", "LAG", "LAG_TIME"])
    if info.name_servers:
        print()
        table([[n.address, "answered" if n.answered else "did not answer"] for n in info.name_servers],
              ["NAME_SERVER", "STATUS"])
    else:
        print(f"\nno name servers: {info.broker} runs standalone")
    return 0
