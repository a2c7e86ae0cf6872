"""`rockmq client list`: the producers and consumers connected to the broker (the cluster's, in a cluster)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rockmq.cli.common import admin_stub, print_json, subcommands, table, warn_unreachable, with_endpoint, with_json

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    client = subcommands(sub, "client", "connected clients", run)
    listing = with_json(with_endpoint(client.add_parser(
        "list", help="connected producers and consumers: client id, kind, group, topics, language, version, address")))
    which = listing.add_mutually_exclusive_group()
    which.add_argument("--group", default="", help="only the consumers of this group")
    which.add_argument("--topic", default="", help="only the clients publishing or subscribing to this topic")


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    reply = admin_stub(args).ListClients(admin.ListClientsRequest(group=args.group, topic=args.topic), timeout=30)
    if args.json:
        print_json(reply)
        return 0
    table([[c.client_id, c.kind, c.group or "-", ",".join(c.topics) or "-", c.language or "-", c.version or "-",
            c.address or "-", c.broker] for c in reply.clients],
          ["CLIENT_ID", "KIND", "GROUP", "TOPICS", "LANGUAGE", "VERSION", "ADDRESS", "BROKER"])
    warn_unreachable(reply.unreachable)
    if reply.more:
        print("rockmq: more clients are connected than a broker lists (max_list_page): narrow with --group or --topic",
              file=sys.stderr)
    return 0
