"""`rockmq acl grant|revoke|list`: who may do what (ACL 2.0)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli.common import REQUEST_TIMEOUT_S, print_json, signed_channel, subcommands, table, with_endpoint, with_json

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.protocol import acl_grpc


def register(sub: Subparsers) -> None:
    acls = subcommands(sub, "acl", "manage who may do what (ACL 2.0; needs a super user)", run)
    grant = with_endpoint(acls.add_parser("grant", help="allow (or --deny) a user actions on a resource"))
    grant.add_argument("user")
    grant.add_argument("--resource", required=True,
                       help="*, Topic:NAME, Topic:PREFIX*, Group:NAME, Group:PREFIX* or Cluster (Get: read /metrics)")
    grant.add_argument("--actions", required=True, metavar="A[,A...]",
                       help="Pub, Sub, Create, Update, Delete, Get, List or All, comma separated")
    grant.add_argument("--source-ip", action="append", default=[], metavar="CIDR",
                       help="only from this IP or network, e.g. 10.0.0.0/8 (repeatable; default: anywhere)")
    grant.add_argument("--deny", action="store_true", help="refuse these actions instead (the most specific entry decides)")
    revoke = with_endpoint(acls.add_parser("revoke", help="remove a user's entry on a resource"))
    revoke.add_argument("user")
    revoke.add_argument("--resource", required=True, help="the resource the entry names")
    with_json(with_endpoint(acls.add_parser("list", help="list ACL entries (of one user, or of all)"))).add_argument(
        "user", nargs="?", default="")


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import acl, acl_grpc

    stub = acl_grpc.AclsStub(signed_channel(args))
    if args.action == "grant":
        _grant(stub, args)
    elif args.action == "revoke":
        gone = stub.RevokeAcl(acl.RevokeAclRequest(user=args.user, resource=args.resource), timeout=REQUEST_TIMEOUT_S).revoked
        print(f"revoked {gone.user}'s entry on {gone.resource} ({gone.decision} {','.join(gone.actions)})")
    else:
        entries = list(stub.ListAcls(acl.ListAclsRequest(user=args.user), timeout=REQUEST_TIMEOUT_S).entries)
        if args.json:
            print_json(entries)
            return 0
        table([[e.user, e.resource, ",".join(e.actions), ",".join(e.source_ips) or "*", e.decision] for e in entries],
              ["USER", "RESOURCE", "ACTIONS", "SOURCE_IPS", "DECISION"])
    return 0


def _grant(stub: acl_grpc.AclsStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import acl

    actions = [a.strip() for a in args.actions.split(",") if a.strip()]
    ips = [ip.strip() for given in args.source_ip for ip in given.split(",") if ip.strip()]
    decision = "Deny" if args.deny else "Allow"
    stub.GrantAcl(acl.AclEntry(user=args.user, resource=args.resource, actions=actions, source_ips=ips,
                               decision=decision), timeout=REQUEST_TIMEOUT_S)
    where = f" from {', '.join(ips)}" if ips else ""
    print(f"{'denied' if args.deny else 'granted'} {args.user} {','.join(actions)} on {args.resource}{where}")
