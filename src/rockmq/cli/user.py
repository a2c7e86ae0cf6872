"""`rockmq user create|update|delete|list`: the users of a broker run with --auth."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    EXIT_USAGE,
    REQUEST_TIMEOUT_S,
    CliError,
    print_json,
    signed_channel,
    subcommands,
    table,
    with_endpoint,
    with_json,
)

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.protocol import users_grpc

SECRET_FROM_STDIN = "'-': read it from stdin, where ps does not show it"


def register(sub: Subparsers) -> None:
    user = subcommands(sub, "user", "manage the users of a broker run with --auth (needs a super user)", run)
    create = with_endpoint(user.add_parser("create", help="create a user"))
    create.add_argument("name")
    create.add_argument("--secret", required=True, help=f"the user's secret key ({SECRET_FROM_STDIN})")
    create.add_argument("--super", dest="super_user", action="store_true", help="a super user: may do anything")
    update = with_endpoint(user.add_parser("update", help="change a user's secret, or enable or disable it"))
    update.add_argument("name")
    update.add_argument("--secret", help=f"a new secret key ({SECRET_FROM_STDIN})")
    enable = update.add_mutually_exclusive_group()
    enable.add_argument("--enable", dest="enabled", action="store_const", const=True, help="let the user in again")
    enable.add_argument("--disable", dest="enabled", action="store_const", const=False, help="refuse the user's requests")
    with_endpoint(user.add_parser("delete", help="delete a user")).add_argument("name")
    with_json(with_endpoint(user.add_parser("list", help="list users (never their secrets)")))


def run(args: argparse.Namespace) -> int:
    from rockmq.protocol import users, users_grpc

    if getattr(args, "secret", None) is not None:  # create and update take one
        args.secret = _secret(args.secret)
    stub = users_grpc.UsersStub(signed_channel(args))
    if args.action == "create":
        info = stub.CreateUser(users.CreateUserRequest(name=args.name, secret=args.secret, super_user=args.super_user),
                               timeout=REQUEST_TIMEOUT_S)
        print(f"created {'super ' if info.super_user else ''}user {info.name}")
    elif args.action == "update":
        _update(stub, args)
    elif args.action == "delete":
        stub.DeleteUser(users.UserRequest(name=args.name), timeout=REQUEST_TIMEOUT_S)
        print(f"deleted user {args.name}")
    else:
        listed = list(stub.ListUsers(users.ListUsersRequest(), timeout=REQUEST_TIMEOUT_S).users)
        if args.json:
            print_json(listed)
            return 0
        table([[u.name, "super" if u.super_user else "normal", "enabled" if u.enabled else "disabled"] for u in listed],
              ["USER", "TYPE", "STATUS"])
    return 0


def _secret(given: str) -> str:
    """--secret's value; '-' reads it from stdin's first line (a secret in argv is visible to every `ps`)."""
    if given != "-":
        return given
    secret = sys.stdin.readline().rstrip("\r\n")
    if not secret:
        raise CliError("--secret -: stdin gave no secret", EXIT_USAGE)
    return secret


def _update(stub: users_grpc.UsersStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import users

    if args.secret is None and args.enabled is None:
        raise CliError("nothing to update: give --secret, --enable or --disable", EXIT_USAGE)
    request = users.UpdateUserRequest(name=args.name)
    if args.secret is not None:
        request.secret = args.secret
    if args.enabled is not None:
        request.enabled = args.enabled
    info = stub.UpdateUser(request, timeout=REQUEST_TIMEOUT_S)
    print(f"updated user {info.name} ({'enabled' if info.enabled else 'disabled'})")
