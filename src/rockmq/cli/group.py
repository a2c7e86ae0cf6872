"""`rockmq group create|list|describe`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli.common import admin_stub, every_page, subcommands, table, warn_unreachable, with_endpoint

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.protocol import admin_grpc


def register(sub: Subparsers) -> None:
    group = subcommands(sub, "group", "manage consumer groups", run)
    create = with_endpoint(group.add_parser("create", help="create a consumer group"))
    create.add_argument("name")
    create.add_argument("--fifo", action="store_true", help="deliver each message group in order")
    create.add_argument("--max-attempts", type=int, default=0, help="deliveries before the DLQ (default: the broker's, 17)")
    create.add_argument("--consume-mode", choices=("pop", "offset"), default="",
                        help="how the group consumes: pop (ReceiveMessage) or offset (pull, UpdateOffset); the other way "
                             "is refused (default: set by the group's first use)")
    with_endpoint(group.add_parser("list", help="list consumer groups"))
    with_endpoint(group.add_parser("describe", help="show a group's offsets, lag and in-flight messages")).add_argument(
        "name")


def run(args: argparse.Namespace) -> int:
    stub = admin_stub(args)
    if args.action == "create":
        _create(stub, args)
    elif args.action == "list":
        _list(stub)
    else:
        _describe(stub, args.name)
    return 0


def _create(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    request = admin.CreateGroupRequest(name=args.name, fifo=args.fifo, max_attempts=args.max_attempts,
                                       consume_mode=args.consume_mode)
    info = stub.CreateGroup(request, timeout=10)
    print(f"created group {info.name} ({'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
          f"consume mode {_consume_mode(info.consume_mode)})")


def _list(stub: admin_grpc.AdminStub) -> None:
    from rockmq.protocol import admin

    groups = every_page(lambda token: stub.ListGroups(admin.ListGroupsRequest(page_token=token), timeout=10), "groups")
    table([[g.name, "FIFO" if g.fifo else "-", g.max_attempts, g.consume_mode or "-"] for g in groups],
          ["GROUP", "FIFO", "MAX_ATTEMPTS", "CONSUME_MODE"])


def _describe(stub: admin_grpc.AdminStub, name: str) -> None:
    from rockmq.protocol import admin

    info = stub.DescribeGroup(admin.GroupRequest(name=name), timeout=30)
    print(f"group {info.name}: {'FIFO' if info.fifo else 'concurrent'}, max attempts {info.max_attempts}, "
          f"consume mode {_consume_mode(info.consume_mode)}, {info.inflight} in flight")
    table([[q.topic, q.broker, q.queue_id, q.pop_offset, "-" if q.committed_offset < 0 else q.committed_offset,
            q.max_offset, q.lag, q.inflight, f"{q.lag_ms / 1000:.1f}s"] for q in info.queues],
          ["TOPIC", "BROKER", "QUEUE", "POP_OFFSET", "COMMITTED", "MAX_OFFSET", "LAG", "INFLIGHT", "LAG_TIME"])
    warn_unreachable(info.unreachable)


def _consume_mode(mode: str) -> str:
    return mode or "not set (the group's first use sets it)"
