"""`rockmq broker promote|config|group|elect`: make a replica a primary; show a broker's effective settings; a
coordinated group's state and its unclean election (coordinated.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli import coordinated
from rockmq.cli.common import admin_stub, print_json, subcommands, table, with_endpoint, with_json

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    broker = subcommands(sub, "broker", "manage a broker", run)
    promote = with_endpoint(broker.add_parser(
        "promote", help="make a replica (at --endpoint) a primary; refused while its primary answers (stop it first)"))
    promote.add_argument("--force", action="store_true", help=(
        "promote even though the primary answers: it is fenced (refuses writes, its clients move to the new primary), "
        "and writes it acknowledged that the replica had not applied are lost from the new primary's view"))


    with_json(with_endpoint(broker.add_parser(
        "config", help="the broker's effective settings (secrets hidden: the admin's secret, the inner credentials)")))
    coordinated.register(broker)


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    if args.action in coordinated.ACTIONS:
        return coordinated.run(args)
    if args.action == "config":
        reply = admin_stub(args).GetConfig(admin.GetConfigRequest(), timeout=10)
        if args.json:
            print_json(reply)
        else:
            print(f"broker {reply.broker}")
            table([[e.name, e.value] for e in reply.settings], ["SETTING", "VALUE"])
        return 0

    reply = admin_stub(args).Promote(admin.PromoteRequest(force=args.force), timeout=30)
    print(f"promoted {args.endpoint} (primary epoch {reply.epoch}): it holds the primary's writes up to batch "
          f"{reply.applied_seq} and now serves writes")
    if reply.primary_answered:
        print("forced while the old primary still answered: it refuses writes once it hears of the new epoch (from the "
              "replica or a name server); writes it acknowledged that were not replicated here are lost from this "
              "primary's view (re-seed the old primary from this one to use it again)")
    return 0
