"""`rockmq group create|list|describe|reset|update|delete`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    CliError,
    admin_stub,
    every_page,
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
    from rockmq.protocol import admin, admin_grpc


def register(sub: Subparsers) -> None:
    group = subcommands(sub, "group", "manage consumer groups", run)
    create = with_endpoint(group.add_parser("create", help="create a consumer group"))
    create.add_argument("name")
    create.add_argument("--fifo", action="store_true", help="deliver each message group in order")
    create.add_argument("--max-attempts", type=int, default=0, help="deliveries before the DLQ (default: the broker's, 17)")
    create.add_argument("--consume-mode", choices=("pop", "offset"), default="",
                        help="how the group consumes: pop (ReceiveMessage) or offset (pull, UpdateOffset); the other way "
                             "is refused (default: set by the group's first use)")
    create.add_argument("--lite-wildcard", action="store_true",
                        help="its lite consumers receive every lite topic of the LITE topic they subscribe, including "
                             "ones created later")
    with_json(with_endpoint(group.add_parser("list", help="list consumer groups")))
    with_json(with_endpoint(group.add_parser("describe", help="show a group's offsets, lag and in-flight messages"))
              ).add_argument("name")
    reset = with_endpoint(group.add_parser("reset", help="move a group's position on a topic, dropping what it has in "
                                                         "flight there (deliveries, retries, FIFO holds)"))
    reset.add_argument("name")
    reset.add_argument("--topic", required=True)
    reset.add_argument("--to", required=True, metavar="earliest|latest|TIME",
                       help="the first message kept, the next one to arrive, or the first stored at or after TIME "
                            "(ISO 8601 with a zone, e.g. 2026-11-29T10:00:00Z)")
    update = with_endpoint(group.add_parser("update", help="change what group create set"))
    update.add_argument("name")
    update.add_argument("--max-attempts", type=number(int, 1), help="deliveries before the DLQ")
    update.add_argument("--fifo", action=argparse.BooleanOptionalAction, default=None,
                        help="deliver each message group in order (refused while messages are in flight)")
    update.add_argument("--consume-mode", choices=("pop", "offset"), help="how the group consumes")
    delete = with_endpoint(group.add_parser("delete", help="delete a group, its positions, in-flight state and its retry "
                                                           "and dead-letter topics"))
    delete.add_argument("name")
    delete.add_argument("--force", action="store_true", help="delete even while consumers of the group are connected")


def run(args: argparse.Namespace) -> int:
    stub = admin_stub(args)
    if args.action == "create":
        _create(stub, args)
    elif args.action == "list":
        _list(stub, args.json)
    elif args.action == "describe":
        _describe(stub, args.name, args.json)
    elif args.action == "reset":
        _reset(stub, args)
    elif args.action == "update":
        _update(stub, args)
    else:
        from rockmq.protocol import admin

        reply = stub.DeleteGroup(admin.DeleteGroupRequest(name=args.name, force=args.force), timeout=30)
        print(f"deleted group {args.name}")
        warn_unreachable(reply.unreachable)
    return 0


def _create(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    request = admin.CreateGroupRequest(name=args.name, fifo=args.fifo, max_attempts=args.max_attempts,
                                       consume_mode=args.consume_mode, lite_wildcard=args.lite_wildcard)
    info = stub.CreateGroup(request, timeout=10)
    print(f"created group {info.name} ({'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
          f"consume mode {_consume_mode(info.consume_mode)}{', lite wildcard' if info.lite_wildcard else ''})")


def _list(stub: admin_grpc.AdminStub, as_json: bool) -> None:
    from rockmq.protocol import admin

    groups = every_page(lambda token: stub.ListGroups(admin.ListGroupsRequest(page_token=token), timeout=10), "groups")
    if as_json:
        print_json(groups)
        return
    table([[g.name, "FIFO" if g.fifo else "-", g.max_attempts, g.consume_mode or "-"] for g in groups],
          ["GROUP", "FIFO", "MAX_ATTEMPTS", "CONSUME_MODE"])


def _describe(stub: admin_grpc.AdminStub, name: str, as_json: bool) -> None:
    from rockmq.protocol import admin

    info = stub.DescribeGroup(admin.GroupRequest(name=name), timeout=30)
    if as_json:
        print_json(info)
        return
    _show(info)


def _reset(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin
    from rockmq.when import parse_instant_ms

    to, at = args.to.lower(), 0
    if to not in ("earliest", "latest"):
        try:
            to, at = "time", parse_instant_ms(args.to)
        except ValueError as e:
            raise CliError(f"--to: {e}; or give earliest or latest") from None
    info = stub.ResetOffset(admin.ResetOffsetRequest(group=args.name, topic=args.topic, to=to, timestamp_ms=at), timeout=30)
    print(f"reset group {args.name} on {args.topic} to {args.to}")
    _show(admin.GroupInfo(name=info.name, fifo=info.fifo, max_attempts=info.max_attempts, consume_mode=info.consume_mode,
                          inflight=info.inflight, unreachable=info.unreachable,
                          queues=[q for q in info.queues if q.topic == args.topic]))


def _update(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    request = admin.UpdateGroupRequest(name=args.name)
    if args.max_attempts is not None:
        request.max_attempts = args.max_attempts
    if args.fifo is not None:
        request.fifo = args.fifo
    if args.consume_mode is not None:
        request.consume_mode = args.consume_mode
    info = stub.UpdateGroup(request, timeout=30)
    print(f"updated group {info.name} ({'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
          f"consume mode {_consume_mode(info.consume_mode)})")


def _show(info: admin.GroupInfo) -> None:
    print(f"group {info.name}: {'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
          f"consume mode {_consume_mode(info.consume_mode)}{', lite wildcard' if info.lite_wildcard else ''}, "
          f"{info.inflight} in flight")
    table([[q.topic, q.broker, q.queue_id, q.pop_offset, "-" if q.committed_offset < 0 else q.committed_offset,
            q.max_offset, q.lag, q.inflight, f"{q.lag_ms / 1000:.1f}s"] for q in info.queues],
          ["TOPIC", "BROKER", "QUEUE", "POP_OFFSET", "COMMITTED", "MAX_OFFSET", "LAG", "INFLIGHT", "LAG_TIME"])
    warn_unreachable(info.unreachable)


def _consume_mode(mode: str) -> str:
    return mode or "not set (the group's first use sets it)"
