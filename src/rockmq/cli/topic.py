"""`rockmq topic create|list|describe|delete|update`; `describe --lite` pages through a LITE topic's lite topics."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    EXIT_USAGE,
    CliError,
    admin_stub,
    every_page,
    format_ms,
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


LITE_PAGE, LITE_PAGE_MAX = 100, 1000  # lite topics a `describe --lite` page shows (ListLiteTopics' default and cap)


def register(sub: Subparsers) -> None:
    topic = subcommands(sub, "topic", "manage topics", run)
    create = with_endpoint(topic.add_parser("create", help="create a topic"))
    create.add_argument("name")
    create.add_argument("--queues", type=number(int, 1), help="number of queues (default: the broker's, 8)")
    create.add_argument("--types", default="", help="accepted message types, e.g. NORMAL,FIFO,DELAY,TRANSACTION "
                                                    "(default all)")
    create.add_argument("--brokers", default="", help="in a cluster: brokers to spread the queues over, e.g. b1,b2 "
                                                      "(default all)")
    create.add_argument("--lite-topic-ttl", type=number(int, 1), metavar="SECONDS",
                        help="--types LITE: a lite topic expires this many seconds after its last message "
                             "(default: the broker's lite_topic_ttl_s)")
    create.add_argument("--max-priority", type=number(int, 1), help="a PRIORITY topic's priorities are 0..N "
                                                                    "(default 9; docs/priority.md)")
    with_json(with_endpoint(topic.add_parser("list", help="list topics")))
    describe = with_json(with_endpoint(topic.add_parser("describe", help="show a topic's queues and offsets")))
    describe.add_argument("name")
    describe.add_argument("--lite", action="store_true",
                          help="a LITE topic: list its lite topics instead (a page in name order; --after for the next)")
    describe.add_argument("--after", default="", metavar="NAME", help="--lite: start after this lite topic (the last one "
                                                                      "of the previous page)")
    describe.add_argument("--limit", type=number(int, 1), default=LITE_PAGE, metavar="N",
                          help=f"--lite: at most N lite topics (default {LITE_PAGE}, at most {LITE_PAGE_MAX})")
    describe.add_argument("--prefix", default="", help="--lite: only lite topics whose name starts with this")
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
    elif args.action == "describe" and args.lite:
        _describe_lite(stub, args)
    elif args.action == "describe":
        if args.after or args.prefix or args.limit != LITE_PAGE:
            raise CliError("--after, --limit and --prefix page through lite topics: add --lite", EXIT_USAGE)
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

    types = [t.strip() for t in args.types.split(",") if t.strip()]
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if args.lite_topic_ttl is not None and [t.upper() for t in types] != ["LITE"]:
        raise CliError("--lite-topic-ttl is for a LITE topic: give --types LITE", EXIT_USAGE)
    request = admin.CreateTopicRequest(name=args.name, queue_count=args.queues or 0, message_types=types, brokers=brokers,
                                       lite_topic_ttl_s=args.lite_topic_ttl or 0)
    request.max_priority = args.max_priority or 0
    info = stub.CreateTopic(request, timeout=30)
    held = sorted({q.broker for q in info.queues})
    where = f" on {', '.join(held)}" if len(held) > 1 else ""
    print(f"created topic {info.name} with {info.queue_count} queues{where} ({', '.join(info.message_types)})"
          f"{_priorities(info)}{_lite(info)}")


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
          f"{_priorities(info)}{_lite(info)}")
    table([[q.broker, q.queue_id, q.min_offset, q.max_offset, q.max_offset - q.min_offset] for q in info.queues],
          ["BROKER", "QUEUE", "MIN_OFFSET", "MAX_OFFSET", "MESSAGES"])
    warn_unreachable(info.unreachable)


def _lite(info: admin.TopicInfo) -> str:
    """What a LITE topic's line adds: its lite topics' lifetime and, described, their count."""
    if "LITE" not in info.message_types:
        return ""
    ttl = f"{info.lite_topic_ttl_s} s" if info.lite_topic_ttl_s else "the broker's default"
    return f"; lite topics: {info.lite_topic_count}, each expiring {ttl} after its last message"


def _describe_lite(stub: admin_grpc.AdminStub, args: argparse.Namespace) -> None:
    """One page of the LITE topic's lite topics, and how to ask for the next."""
    from rockmq.protocol import admin

    if args.limit > LITE_PAGE_MAX:
        raise CliError(f"--limit is at most {LITE_PAGE_MAX}", EXIT_USAGE)
    reply = stub.ListLiteTopics(admin.ListLiteTopicsRequest(topic=args.name, after=args.after, limit=args.limit,
                                                            prefix=args.prefix), timeout=30)
    if args.json:
        print_json(reply)
        return
    table([[t.name, t.broker, t.queue_id, t.min_offset, t.max_offset, format_ms(t.last_store_ms) if t.last_store_ms else "-"]
           for t in reply.lite_topics], ["NAME", "BROKER", "QUEUE", "MIN", "MAX", "LAST MESSAGE"])
    if not reply.lite_topics:
        print(f"topic {args.name} has no lite topics" + (f" after {args.after}" if args.after else ""))
    elif reply.more:
        print(f"... more: the next page with --after {reply.lite_topics[-1].name}")
    warn_unreachable(reply.unreachable)


def _priorities(info: admin.TopicInfo) -> str:
    """A PRIORITY topic's range, as create and describe print it ("" for other topics)."""
    return f", priorities 0..{info.max_priority}" if info.max_priority else ""
