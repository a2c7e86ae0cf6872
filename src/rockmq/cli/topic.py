"""`rockmq topic create|list|describe|delete|update`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    EXIT_USAGE,
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
    topic = subcommands(sub, "topic", "manage topics", run)
    create = with_endpoint(topic.add_parser("create", help="create a topic"))
    create.add_argument("name")
    create.add_argument("--queues", type=number(int, 1), help="number of queues (default: the broker's, 8)")
    create.add_argument("--types", default="", help="accepted message types, e.g. NORMAL,FIFO,DELAY,TRANSACTION "
                                                    "(default all)")
    create.add_argument("--brokers", default="", help="in a cluster: brokers to spread the queues over, e.g. b1,b2 "
                                                      "(default all)")
    create.add_argument("--max-priority", type=number(int, 1), help="a PRIORITY topic's priorities are 0..N "
                                                                    "(default 9; docs/priority.md)")
    with_json(with_endpoint(topic.add_parser("list", help="list topics")))
    with_json(with_endpoint(topic.add_parser("describe", help="show a topic's queues and offsets"))).add_argument("name")
    with_endpoint(topic.add_parser("delete", help="delete a topic and its messages")).add_argument("name")
    update = with_endpoint(topic.add_parser("update", help="change a topic's queue count or permission"))
    update.add_argument("name")
    update.add_argument("--queues", type=number(int, 1), help="the new number of queues (in a cluster: the total); "
                                                              "shrinking removes only queues that never held a message")
    update.add_argument("--perm", choices=("rw", "r", "w"), help="rw; r: sends refused; w: receives refused")


def run(args: argparse.Namespace) -> int:
    stub = admin_stub(args)
    if args.action == "create":
        _create(stub, args)
    elif args.action == "list":
        _list(stub, args.json)
    elif args.action == "describe":
        _describe(stub, args.name, args.json)
    elif args.action == "update":
        _update(stub, args)
    else:
        from rockmq.protocol import admin

        stub.DeleteTopic(admin.TopicRequest(name=args.name), timeout=30)
        print(f"deleted topic {args.name}")
    return 0


def _create(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    types = [t for t in args.types.split(",") if t.strip()]
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    request = admin.CreateTopicRequest(name=args.name, queue_count=args.queues or 0, message_types=types, brokers=brokers)
    request.max_priority = args.max_priority or 0
    info = stub.CreateTopic(request, timeout=30)
    held = sorted({q.broker for q in info.queues})
    where = f" on {', '.join(held)}" if len(held) > 1 else ""
    print(f"created topic {info.name} with {info.queue_count} queues{where} ({', '.join(info.message_types)})"
          f"{_priorities(info)}")


def _update(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    from rockmq.protocol import admin

    if args.queues is None and args.perm is None:
        raise CliError("nothing to change: give --queues N or --perm rw|r|w", EXIT_USAGE)
    info = stub.UpdateTopic(admin.UpdateTopicRequest(name=args.name, queue_count=args.queues or 0, perm=args.perm or ""),
                            timeout=30)
    print(f"updated topic {info.name}: {info.queue_count} queues, perm {info.perm}")


def _list(stub: admin_grpc.AdminStub, as_json: bool) -> None:
    from rockmq.protocol import admin

    topics = every_page(lambda token: stub.ListTopics(admin.ListTopicsRequest(page_token=token), timeout=10), "topics")
    if as_json:
        print_json(topics)
        return
    table([[t.name, t.queue_count, ",".join(t.message_types)] for t in topics], ["TOPIC", "QUEUES", "TYPES"])


def _describe(stub: admin_grpc.AdminStub, name: str, as_json: bool) -> None:
    from rockmq.protocol import admin

    info = stub.DescribeTopic(admin.TopicRequest(name=name), timeout=10)
    if as_json:
        print_json(info)
        return
    print(f"topic {info.name}: {info.queue_count} queues, types {', '.join(info.message_types)}, perm {info.perm or 'rw'}"
          f"{_priorities(info)}")
    table([[q.broker, q.queue_id, q.min_offset, q.max_offset, q.max_offset - q.min_offset] for q in info.queues],
          ["BROKER", "QUEUE", "MIN_OFFSET", "MAX_OFFSET", "MESSAGES"])
    warn_unreachable(info.unreachable)


def _priorities(info: admin.TopicInfo) -> str:
    """A PRIORITY topic's range, as create and describe print it ("" for other topics)."""
    return f", priorities 0..{info.max_priority}" if info.max_priority else ""
