"""`rockmq bench`'s flags, parsed into a frozen Options that worker processes receive."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from rockmq.bench.probe import broker_sample
from rockmq.plumbing.channels import Tls, tls_of
from rockmq.plumbing.credentials import Credentials, credentials_from

SCENARIOS = ("produce-batch", "produce-single", "consume", "consume-batch", "latency",
             "consume-own", "pull-own", "producer-own", "send-sync")
ALONE = ("soak", "ceiling")  # chosen by name only, never by 'all'
DEFAULT_CONCURRENCY = {"produce-batch": 64, "produce-single": 64, "consume": 8, "consume-batch": 4, "consume-own": 2,
                       "producer-own": 256}
OWN_BATCH = 256  # consume-own, pull-own: messages per receive or pull (docs/benchmarks.md, consume-own)
SEND_BATCH = 64  # producer-own: send_batch's size, compared with as many single sends in flight
# The raw sends, which --lite-topics / --priorities turn into LITE / PRIORITY ones.
LITE_SCENARIOS = ("produce-batch", "produce-single", "latency")
NEW_LITE = 0  # --lite-topics new: every message to a lite topic of its own, created by that send


@dataclass(frozen=True)
class Options:
    """Parsed command line; frozen and picklable so it can travel to worker processes."""

    endpoint: str
    topic: str
    group: str
    scenario: str
    duration: float
    messages: int | None
    consume_messages: int
    batch: int
    size: int
    concurrency: int | None
    processes: int
    rate: float
    rpc_timeout: float
    broker_pid: int | None
    json: bool
    ceiling: bool
    ceiling_dir: str | None = None
    repeats: int = 1
    tls: Tls | None = None  # --tls [--tls-ca FILE]
    access_key: str | None = None  # a broker run with --auth: every request signed as this user
    secret_key: str | None = None
    lite_topics: int | None = None  # LITE messages to this many lite topics in turn (NEW_LITE: a new one each)
    priorities: int | None = None  # PRIORITY messages of priorities 0..N-1 in turn

    def credentials(self) -> Credentials | None:
        return credentials_from(self.access_key, self.secret_key)


def lite_topics(text: str) -> int:
    """--lite-topics: a positive count, or 'new' (NEW_LITE)."""
    if text == "new":
        return NEW_LITE
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive count or 'new', not {text!r}")
    return int(text)


def parse_args(argv: list[str] | None, description: str) -> Options:
    """Flags to Options; refuse non-positive sizes and rates early rather than mid-run."""
    parser = argparse.ArgumentParser(prog="rockmq bench", description=description)
    parser.add_argument("--endpoint", default="127.0.0.1:8081", help="broker gRPC address (host:port)")
    parser.add_argument("--scenario", choices=(*SCENARIOS, *ALONE, "all"), default="all",
                        help="'all' runs every scenario but soak and ceiling (soak is long: give --duration 300); "
                             "'ceiling' measures only the ceilings, no broker needed")
    parser.add_argument("--topic", default="bench")
    parser.add_argument("--group", default="bench-group", help="consumer group for the consume scenarios")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per produce/latency run")
    parser.add_argument("--messages", type=int, help="produce exactly N messages instead of --duration; consume N")
    parser.add_argument("--consume-messages", type=int, default=100_000, help="consume N when --messages is unset")
    parser.add_argument("--batch", type=int, default=32, help="messages per SendMessage (produce-batch) and receive")
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="requests (produce) or receive-then-ack loops (consume) in flight, over all processes (at least one per process); "
             "default: " + ", ".join(f"{name} {n}" for name, n in DEFAULT_CONCURRENCY.items())
             + " (consume's prefill as produce-batch); latency, send-sync, pull-own and soak keep their own schedule",
    )
    parser.add_argument("--processes", type=int, default=1, help="client processes sharing the load")
    parser.add_argument("--rate", type=float, default=2000.0, help="latency scenario: messages per second")
    parser.add_argument("--rpc-timeout", type=float, default=10.0, help="seconds per RPC")
    parser.add_argument("--broker-pid", type=int,
                        help="report this process's RSS and CPU (default: the process listening on the endpoint's port)")
    parser.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                        help="skip the ceilings (null broker runs beside each scenario): quicker, no ratios")
    parser.add_argument("--ceiling-dir", help="where the fsync and RocksDB ceilings write (default: the system's temporary "
                                              "directory; give one on the broker's data disk if that is tmpfs or another disk)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of each scenario, each followed by its ceilings; figures are the rounds' medians")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    parser.add_argument("--tls", action="store_true", help="connect over TLS (verified against the system's roots or --tls-ca)")
    parser.add_argument("--tls-ca", metavar="FILE", help="verify the broker's certificate against this CA (PEM); implies --tls")
    parser.add_argument("--access-key", help="a broker run with --auth: sign as this user (env ROCKMQ_ACCESS_KEY)")
    parser.add_argument("--secret-key", help="the user's secret key (env ROCKMQ_SECRET_KEY)")
    parser.add_argument("--lite-topics", metavar="N|new", type=lite_topics,
                        help=f"send LITE messages (--topic must be a LITE topic): to N lite topics in turn, or 'new': each "
                             f"message to a lite topic of its own, created by its send ({', '.join(LITE_SCENARIOS)})")
    parser.add_argument("--priorities", metavar="N", type=int,
                        help="send PRIORITY messages (--topic must be a PRIORITY topic of max priority N-1 or more): "
                             f"priorities 0..N-1 in turn ({', '.join(LITE_SCENARIOS)})")
    args = parser.parse_args(argv)
    for name in ("duration", "batch", "size", "processes", "rate", "rpc_timeout", "consume_messages", "repeats"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    for name in ("messages", "concurrency", "priorities"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive")
    for name in ("lite_topics", "priorities"):
        if getattr(args, name) is not None and args.scenario not in LITE_SCENARIOS:
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag} takes one of the scenarios {', '.join(LITE_SCENARIOS)}, not {args.scenario}")
    if args.lite_topics is not None and args.priorities is not None:
        parser.error("--lite-topics and --priorities exclude each other: a LITE message has no priority")
    if args.ceiling_dir is not None and not os.path.isdir(args.ceiling_dir):
        parser.error(f"--ceiling-dir {args.ceiling_dir}: no such directory")
    if args.broker_pid is not None and broker_sample(args.broker_pid) is None:  # not silently left out of the figures
        parser.error(f"--broker-pid {args.broker_pid}: no such process is running")
    if args.tls_ca is not None and not os.access(args.tls_ca, os.R_OK):
        parser.error(f"--tls-ca {args.tls_ca}: cannot read it")
    try:
        credentials_from(args.access_key, args.secret_key)
    except ValueError as e:
        parser.error(str(e))
    fields = vars(args)
    fields["tls"] = tls_of(fields.pop("tls"), fields.pop("tls_ca"))
    return Options(**fields)
