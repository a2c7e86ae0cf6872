"""`rockmq dlq list|resend|purge`: a consumer group's dead letters (the %DLQ%<group> topic).

`resend` sends each back to the topic it came from for that group only (broker/dead_letters.py);
the copy stays in the dead-letter topic until `purge` removes it. `purge` asks nothing: scripts run it.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    CliError,
    admin_stub,
    format_ms,
    instant,
    number,
    print_json,
    subcommands,
    table,
    warn_unreachable,
    with_endpoint,
    with_json,
)

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.protocol import admin_grpc

RESEND_TIMEOUT_S = 3600.0  # a paced resend of many letters takes its time (admin_fanout.PACED_TIMEOUT_S)


def register(sub: Subparsers) -> None:
    dlq = subcommands(sub, "dlq", "a consumer group's dead letters (%%DLQ%%<group>)", run)
    listing = with_json(with_endpoint(dlq.add_parser("list", help="list a group's dead letters")))
    listing.add_argument("group")
    listing.add_argument("--from", dest="since", type=instant, default=0, metavar="T",
                         help="stored at or after T (ISO 8601 with a zone, e.g. 2026-11-29T10:00:00Z)")
    listing.add_argument("--to", dest="until", type=instant, default=0, metavar="T", help="stored before T")
    listing.add_argument("--max", type=number(int, 1), default=0,
                         help="at most this many (default and most: the broker's max_list_page)")
    resend = with_endpoint(dlq.add_parser("resend", help="send dead letters back to their topic, for the group only"))
    resend.add_argument("group")
    which = resend.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", dest="ids", action="append", metavar="ID", help="a message id (repeat for more)")
    which.add_argument("--all", action="store_true", help="every dead letter of the group")
    resend.add_argument("--rate", type=number(int, 1), default=0, metavar="N", help="at most N per second (default: no limit)")
    purge = with_endpoint(dlq.add_parser("purge", help="remove a group's dead letters (no prompt)"))
    purge.add_argument("group")
    purge.add_argument("--before", type=instant, default=0, metavar="T", help="only those stored before T")


def run(args: argparse.Namespace) -> int:
    stub = admin_stub(args)
    if args.action == "list":
        _list(stub, args)
        return 0
    if args.action == "resend":
        return _resend(stub, args)
    from rockmq.protocol import admin

    reply = stub.PurgeDeadLetters(admin.DlqPurgeRequest(group=args.group, before_ms=args.before), timeout=30)
    print(f"purged {reply.purged} dead letters of group {args.group}")
    warn_unreachable(reply.unreachable)
    return 0


def _list(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    request = admin.DlqListRequest(group=args.group, from_ms=args.since, to_ms=args.until, limit=args.max)
    reply = stub.ListDeadLetters(request, timeout=30)
    if args.json:
        print_json(reply)
        return
    table([[m.message_id, m.topic, m.attempts or "-", format_ms(m.store_ms), ",".join(m.keys) or "-", m.broker]
           for m in reply.messages], ["ID", "TOPIC", "ATTEMPTS", "STORED", "KEYS", "BROKER"])
    if reply.more:
        print(f"(more matched: showing the first {len(reply.messages)}; narrow with --from/--to or raise --max)",
              file=sys.stderr)
    warn_unreachable(reply.unreachable)


def _resend(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> int:
    from rockmq.protocol import admin

    request = admin.DlqResendRequest(group=args.group, message_ids=args.ids or [], all=args.all, rate=args.rate)
    reply = stub.ResendDeadLetters(request, timeout=RESEND_TIMEOUT_S if args.rate else 60)
    if reply.unknown:
        raise CliError(f"group {args.group} has no dead letter {', '.join(reply.unknown)}"
                       + (f" (sent back {reply.resent} others)" if reply.resent else ""))
    print(f"sent back {reply.resent} dead letters to group {args.group}")
    for why in reply.skipped:
        print(f"not sent back: {why}", file=sys.stderr)
    if reply.skipped_count > len(reply.skipped):
        print(f"not sent back: {reply.skipped_count - len(reply.skipped)} more", file=sys.stderr)
    warn_unreachable(reply.unreachable)
    return 1 if reply.skipped_count else 0
