"""`rockmq message send|recall|tail`: through rockmq's own client, routed like any client's requests;
`rockmq message get|find|list|trace`: the Messages admin service (broker/api/messages.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rockmq.cli.common import (
    EXIT_USAGE,
    REQUEST_TIMEOUT_S,
    CliError,
    admin_stub,
    credentials,
    format_ms,
    number,
    signed_channel,
    subcommands,
    table,
    tls,
    warn_unreachable,
    with_endpoint,
)

if TYPE_CHECKING:
    from rockmq.cli.common import Subparsers
    from rockmq.client import Message, ReceivedMessage
    from rockmq.protocol import admin
    from rockmq.protocol._gen.rockmq.admin.v1 import messages_pb2

TAIL_POLL_S = 5.0  # a tail's long poll: how long a broker holds a receive open while it has nothing
TAIL_INVISIBLE_S = 30  # what a tail receives stays invisible to the group's other consumers this long


def register(sub: Subparsers) -> None:
    message = subcommands(sub, "message", "send, tail, find and trace messages", run)
    _register_send(message)
    _register_lookups(message)
    recall = with_endpoint(message.add_parser("recall", help="cancel a pending delayed message"))
    recall.add_argument("topic")
    recall.add_argument("handle", help="the recall handle `message send --delay` printed")
    tail = with_endpoint(message.add_parser("tail", help="receive, print and acknowledge messages"))
    tail.add_argument("topic")
    tail.add_argument("--group", required=True, help="consumer group")
    which = tail.add_mutually_exclusive_group()
    which.add_argument("--tag", default="*", help="tag expression, e.g. 'a||b' (default *)")
    which.add_argument("--sql", metavar="EXPR", help="SQL92 filter over properties and TAGS, e.g. \"region = 'eu'\"")
    tail.add_argument("--no-ack", action="store_true",
                      help=f"print without acknowledging: the group gets them again after {TAIL_INVISIBLE_S} s "
                           "(each time counts a delivery attempt)")
    tail.add_argument("--count", type=number(int, 0), default=0,
                      help="stop after this many messages (default: run until Ctrl-C)")
    tail.add_argument("--timeout", type=number(float, 0), default=0,
                      help="stop after this many idle seconds (default: never)")
    tail.add_argument("--lite-topic", metavar="NAME",
                      help="tail this lite topic of the LITE topic: its queue is read by offset from where --group left "
                           "it (else from its first message) and the position committed after each batch (not with "
                           "--no-ack); the group becomes an offset group: give tailing a group of its own")


def _register_send(message: Subparsers) -> None:
    send = with_endpoint(message.add_parser("send", help="send one message"))
    send.add_argument("topic")
    send.add_argument("body", nargs="?", help="the message body (or --body-file)")
    send.add_argument("--body-file", metavar="PATH", help="read the body from this file (- for standard input)")
    send.add_argument("--tag")
    send.add_argument("--key", action="append", default=[], help="a message key (repeatable)")
    send.add_argument("--message-group", help="message group (makes it a FIFO message)")
    send.add_argument("--lite-topic", metavar="NAME", help="send to this lite topic of the LITE topic (created by its first "
                                                           "message; not with --message-group, --delay or --deliver-at)")
    send.add_argument("--group", dest="consumer_group", help=argparse.SUPPRESS)  # only to say what to use instead
    send.add_argument("--property", action="append", default=[], metavar="K=V", help="a user property (repeatable)")
    send.add_argument("--priority", type=number(int, 0), help="to a PRIORITY topic: 0..its max priority, higher "
                                                                "is consumed first (a PRIORITY message)")
    due = send.add_mutually_exclusive_group()
    due.add_argument("--delay", help="deliver after this delay: 1500ms, 30s, 2h, 1d (a DELAY message)")
    due.add_argument("--deliver-at", metavar="TIME",
                     help="deliver at this ISO 8601 time with a zone, e.g. 2027-03-01T12:00:00+01:00 or ...Z")


def run(args: argparse.Namespace) -> int:
    if args.action in LOOKUPS:
        return _look_up(args)
    if args.action == "tail":
        from rockmq.protocol import admin

        admin_stub(args).DescribeTopic(admin.TopicRequest(name=args.topic), timeout=REQUEST_TIMEOUT_S)  # tailing creates no topic
        if args.lite_topic is not None:
            return asyncio.run(_tail_lite(args, _lite_topic(args)))
        return asyncio.run(_tail(args))
    return asyncio.run(_send_or_recall(args))


def _due_ms(args: argparse.Namespace) -> int | None:
    """The delivery time `--delay` / `--deliver-at` ask for, in ms since the epoch."""
    from rockmq.when import parse_delay_ms, parse_instant_ms

    try:
        if args.delay is not None:
            return int(time.time() * 1000) + parse_delay_ms(args.delay)
        if args.deliver_at is not None:
            return parse_instant_ms(args.deliver_at)
    except ValueError as e:
        raise CliError(str(e), EXIT_USAGE) from None
    return None


def _body(args: argparse.Namespace) -> bytes:
    """The body given as an argument or read from `--body-file` (- for standard input)."""
    if args.body is not None and args.body_file is not None:
        raise CliError("give the body as an argument or with --body-file, not both", EXIT_USAGE)
    if args.body is None and args.body_file is None:
        raise CliError("no body: give it as an argument or with --body-file PATH (- for standard input)", EXIT_USAGE)
    if args.body is not None:
        return str(args.body).encode()
    if args.body_file == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(args.body_file).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read --body-file {args.body_file}: {e.strerror}", EXIT_USAGE) from None


def _message_to_send(args: argparse.Namespace) -> Message:
    from rockmq.client import Message

    if args.consumer_group is not None:
        raise CliError("on send, name a FIFO message group with --message-group (--group names a consumer group)",
                       EXIT_USAGE)
    props = {}
    for kv in args.property:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise CliError(f"--property expects K=V, got {kv!r}")
        props[k] = v
    due = _due_ms(args)
    if due is not None and args.message_group:
        raise CliError("--message-group cannot be combined with --delay/--deliver-at: a message is FIFO or delayed",
                       EXIT_USAGE)
    if args.priority is not None and (due is not None or args.message_group):
        raise CliError("--priority cannot be combined with --message-group or --delay/--deliver-at: "
                       "a message is PRIORITY, FIFO or delayed", EXIT_USAGE)
    return Message(args.topic, _body(args), tag=args.tag, keys=tuple(args.key), properties=props,
                   message_group=args.message_group or None,
                   deliver_at=None if due is None else datetime.fromtimestamp(due / 1000, UTC), lite_topic=args.lite_topic,
                   priority=args.priority)


async def _send_or_recall(args: argparse.Namespace) -> int:
    from rockmq.client import AsyncProducer, at_random

    message = _message_to_send(args) if args.action == "send" else None
    # One send per process: a round robin would always start at the first queue. A broker out of reach
    # is said at once (no riding out a failover: the operator sees it and runs the command again).
    async with AsyncProducer(args.endpoint, request_timeout=REQUEST_TIMEOUT_S, delivery_timeout=0, selector=at_random,
                             tls=tls(args), credentials=credentials(args)) as producer:
        if message is None:
            print(f"recalled {await producer.recall(args.topic, args.handle)} from {args.topic}")
            return 0
        receipt = await producer.send(message)
    if receipt.recall_handle and message.deliver_at is not None:
        due = format_ms(round(message.deliver_at.timestamp() * 1000))
        print(f"sent {receipt.message_id} to {args.topic}, due at {due}; recall handle {receipt.recall_handle}")
    elif message.lite_topic is not None:  # the receipt's queue is the one sent through, not the lite topic's
        print(f"sent {receipt.message_id} to lite topic {message.lite_topic} of {args.topic} at offset {receipt.offset} "
              f"(broker {receipt.broker})")
    else:
        print(f"sent {receipt.message_id} to {args.topic} at offset {receipt.offset} "
              f"(broker {receipt.broker}, queue {receipt.queue_id})")
    return 0


async def _tail(args: argparse.Namespace) -> int:
    """Receive, print and (unless `--no-ack`) acknowledge until `--count` messages or `--timeout` idle seconds."""
    from rockmq.client import AsyncSimpleConsumer, Filter

    poll_s = min(TAIL_POLL_S, args.timeout) if args.timeout else TAIL_POLL_S
    wanted = Filter.sql92(args.sql) if args.sql is not None else Filter.tag(args.tag)
    received, idle_since = 0, time.monotonic()
    async with AsyncSimpleConsumer(args.endpoint, args.group, {args.topic: wanted}, await_s=poll_s,
                                   request_timeout=REQUEST_TIMEOUT_S, tls=tls(args), credentials=credentials(args)) as consumer:
        while not args.count or received < args.count:
            batch = await consumer.receive(_tail_batch(args, received), invisible_s=TAIL_INVISIBLE_S)
            for m in batch:
                print(tail_line(m), flush=True)
            if batch:
                for m, why in [] if args.no_ack else await consumer.ack_many(batch):
                    print(f"rockmq: not acknowledged, it will come again: {m.message_id} ({why})", file=sys.stderr)
                received += len(batch)
                idle_since = time.monotonic()
            elif args.timeout and time.monotonic() - idle_since >= args.timeout:
                break
    return 0


def _tail_batch(args: argparse.Namespace, received: int) -> int:
    """How many messages the next receive or pull of a tail asks for."""
    return min(32, args.count - received) if args.count else 32


def _lite_topic(args: argparse.Namespace) -> admin.LiteTopicInfo:
    """The lite topic `--lite-topic` names, as ListLiteTopics lists it (its broker, queue, offsets)."""
    from rockmq.protocol import admin

    reply = admin_stub(args).ListLiteTopics(admin.ListLiteTopicsRequest(topic=args.topic, prefix=args.lite_topic, limit=1),
                                            timeout=REQUEST_TIMEOUT_S)
    if not reply.lite_topics or reply.lite_topics[0].name != args.lite_topic:
        missing = "; some of its brokers did not answer" if reply.unreachable else ""
        raise CliError(f"topic {args.topic} has no lite topic {args.lite_topic} (none sent yet, or expired){missing}")
    found: admin.LiteTopicInfo = reply.lite_topics[0]
    return found


async def _tail_lite(args: argparse.Namespace, lite: admin.LiteTopicInfo) -> int:
    """Tail one lite topic: pull its queue from the group's committed offset (else its first
    message), print, and commit after each batch unless `--no-ack`."""
    from rockmq.client import AsyncPullConsumer, Filter, Queue

    poll_s = min(TAIL_POLL_S, args.timeout) if args.timeout else TAIL_POLL_S
    wanted = Filter.sql92(args.sql) if args.sql is not None else Filter.tag(args.tag)
    received, idle_since = 0, time.monotonic()
    async with AsyncPullConsumer(args.endpoint, args.group, request_timeout=REQUEST_TIMEOUT_S, tls=tls(args),
                                 credentials=credentials(args)) as consumer:
        routed = await consumer.queues(args.topic)
        broker = lite.broker or (routed[0].broker if routed else "")
        endpoint = next((q.endpoint for q in routed if q.broker == broker), None)
        if endpoint is None:
            raise CliError(f"broker {broker} of lite topic {lite.name} is not in the route of {args.topic}")
        queue = Queue(args.topic, broker, endpoint, lite.queue_id)
        committed = await consumer.committed(queue)
        offset = lite.min_offset if committed is None else committed
        while not args.count or received < args.count:
            pulled = await consumer.pull(queue, offset, max_messages=_tail_batch(args, received), filter=wanted,
                                         poll_s=poll_s)
            for m in pulled.messages:
                print(tail_line(m), flush=True)
            if pulled.next_offset != offset and not args.no_ack:
                await consumer.commit(queue, pulled.next_offset)
            offset = pulled.next_offset
            if pulled.messages:
                received += len(pulled.messages)
                idle_since = time.monotonic()
            elif args.timeout and time.monotonic() - idle_since >= args.timeout:
                break
    return 0


def tail_line(m: ReceivedMessage) -> str:
    """One received message: where it is (a lite topic's: its name too), its id, tag, keys, properties
    and attempt, then its body."""
    lite = f" lite={m.lite_topic}" if m.lite_topic is not None else ""
    keys = f" keys={','.join(m.keys)}" if m.keys else ""
    props = f" properties={json.dumps(m.properties, ensure_ascii=False, sort_keys=True)}" if m.properties else ""
    return (f"[{m.broker}:{m.queue_id}:{m.offset}]{lite} id={m.message_id} tag={m.tag or '-'}{keys}{props} "
            f"attempt={m.delivery_attempt} {m.body.decode(errors='replace')}")


# --- get, find, list, trace: the Messages service (broker/api/messages.py) ---------------------

LOOKUPS = ("get", "find", "list", "trace")
BODY_FORMATS = ("text", "hex", "json")


def _register_lookups(message: Subparsers) -> None:
    def lookup(name: str, help: str) -> argparse.ArgumentParser:
        parser = with_endpoint(message.add_parser(name, help=help))
        parser.add_argument("topic")
        parser.add_argument("--json", action="store_true", help="one JSON document, for scripts")
        return parser

    def shown(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--body-format", choices=BODY_FORMATS, default="text",
                            help="print the body as text (UTF-8, undecodable bytes replaced), hex, or parsed JSON")

    def window(parser: argparse.ArgumentParser, required: bool) -> None:
        parser.add_argument("--from", dest="from_", required=required, metavar="TIME",
                            help="stored at or after this ISO 8601 time with a zone" + ("" if required else " (default: any)"))
        parser.add_argument("--to", metavar="TIME", help="stored at or before this ISO 8601 time with a zone (default: now)")
        parser.add_argument("--max", type=number(int, 1), default=100, help="show at most N messages (default 100)")

    get = lookup("get", "show a stored message by its message id")
    get.add_argument("message_id", metavar="ID")
    shown(get)
    find = lookup("find", "show the stored messages with a key")
    find.add_argument("--key", required=True)
    window(find, required=False)
    shown(find)
    listed = lookup("list", "show the messages stored in a time window")
    window(listed, required=True)
    shown(listed)
    trace = lookup("trace", "show what happened to a message: stored, delivered, acknowledged...")
    trace.add_argument("message_id", metavar="ID")


def _instant(text: str | None, flag: str) -> int:
    from rockmq.when import parse_instant_ms

    if text is None:
        return 0
    try:
        return parse_instant_ms(text)
    except ValueError as e:
        raise CliError(f"{flag}: {e}", EXIT_USAGE) from None


def _look_up(args: argparse.Namespace) -> int:
    from rockmq.protocol import messages, messages_grpc

    stub = messages_grpc.MessagesStub(signed_channel(args))
    if args.action == "trace":
        trace = stub.TraceMessage(messages.TraceMessageRequest(topic=args.topic, message_id=args.message_id),
                                  timeout=REQUEST_TIMEOUT_S)
        _print_trace(trace, args.json)
        return 0
    if args.action == "get":
        reply = stub.GetMessage(messages.GetMessageRequest(topic=args.topic, message_id=args.message_id),
                                timeout=REQUEST_TIMEOUT_S)
    else:
        from_ms, to_ms = _instant(args.from_, "--from"), _instant(args.to, "--to")
        if to_ms and to_ms < from_ms:
            raise CliError("--to is before --from", EXIT_USAGE)
        if args.action == "find":
            reply = stub.FindMessages(messages.FindMessagesRequest(topic=args.topic, key=args.key, from_ms=from_ms,
                                                                   to_ms=to_ms, max=args.max), timeout=REQUEST_TIMEOUT_S)
        else:
            reply = stub.ListMessages(messages.ListMessagesRequest(topic=args.topic, from_ms=from_ms, to_ms=to_ms,
                                                                   max=args.max), timeout=REQUEST_TIMEOUT_S)
    _print_messages(reply, args.body_format, args.json)
    return 0


def _body_shown(body: bytes, body_format: str) -> object:
    """The body as `--body-format` asks (json: parsed, or the text if it is not JSON)."""
    import json

    if body_format == "hex":
        return body.hex()
    text = body.decode(errors="replace")
    if body_format == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _described(stored: messages_pb2.StoredMessage, body_format: str) -> dict[str, object]:
    """What the commands show of a stored message."""
    from rockmq.protocol import pb

    m = stored.message
    sp = m.system_properties
    return {
        "message_id": sp.message_id, "topic": m.topic.name, "broker": stored.broker, "queue_id": sp.queue_id,
        "offset": sp.queue_offset, "stored": format_ms(sp.store_timestamp.ToMilliseconds()),
        "born": format_ms(sp.born_timestamp.ToMilliseconds()), "born_host": sp.born_host,
        "tag": sp.tag if sp.HasField("tag") else None, "keys": list(sp.keys),
        "message_group": sp.message_group if sp.HasField("message_group") else None,
        "priority": sp.priority if sp.HasField("priority") else None,
        "type": pb.MessageType.Name(sp.message_type), "properties": dict(m.user_properties),
        "body": _body_shown(m.body, body_format),
    }


def _print_messages(reply: messages_pb2.MessagesResponse, body_format: str, as_json: bool) -> None:
    import json

    shown = [_described(s, body_format) for s in reply.messages]
    if as_json:
        print(json.dumps({"messages": shown, "more": reply.more, "unreachable": list(reply.unreachable)}, indent=2))
    else:
        for i, d in enumerate(shown):
            if i:
                print()
            body = d.pop("body")
            for name, value in d.items():
                if value not in (None, [], {}):
                    print(f"{name + ':':15} {_plain(value)}")
            print(f"{'body:':15} {body if isinstance(body, str) else json.dumps(body)}")
        if not shown:
            print("no message matched")
        elif reply.more:
            print(f"\n... more matched: showing the first {len(shown)} (raise --max or narrow --from/--to)")
        warn_unreachable(reply.unreachable)


def _plain(value: object) -> object:
    """A field as a person reads it: keys comma-separated, properties as k=v."""
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return value


def _print_trace(trace: messages_pb2.TraceMessageResponse, as_json: bool) -> None:
    import json

    events = [{"at": format_ms(e.at_ms), "event": e.kind, "broker": e.broker, "queue_id": e.queue_id,
               "offset": e.offset, "group": e.group, "client_id": e.client_id, "attempt": e.attempt}
              for e in trace.events]
    if as_json:
        print(json.dumps({"events": events, "unreachable": list(trace.unreachable)}, indent=2))
        return
    table([[e["at"], e["event"], f"{e['broker']}:{e['queue_id']}:{e['offset']}" if e["offset"] != -1 else "-", e["group"] or "-",
            e["client_id"] or "-", e["attempt"] or "-"] for e in events],
          ["TIME", "EVENT", "WHERE", "GROUP", "CLIENT", "ATTEMPT"])
    warn_unreachable(trace.unreachable)
