"""Benchmark SQL92 subscription matching: SubscriptionIndex against evaluating every subscription.

Pure CPU in one process, no broker:

    PYTHONPATH=src python bench/filter_bench.py
    PYTHONPATH=src python bench/filter_bench.py --subscriptions 5000 --types 2000 --messages 200000 --naive-messages 300

Subscriptions are shaped like the field report, `MessageType = '<one of --types>' AND buyerId = <n>`
plus 1-3 more conditions (a range or BETWEEN on amount, an IN on region, an OR on channel, a
priority floor, ...), in shuffled order; the index is on MessageType. Messages carry MessageType
(uniform over the types), buyerId, amount, region, channel, priority, vip and country. Amounts are
decimal strings, so the subscriptions compare them with decimal literals (`amount > 250.0`): in
RocketMQ `amount > 250` parses "199.99" as an Integer, fails, and the message never matches.

Naive evaluation runs on fewer messages so that it finishes in seconds; both must find the same
subscriptions for those. Printed: messages/s each way (by wall clock and by this process's CPU
time, which is what "one core" means on a shared machine), the speedup, and the targets next to the
figures, judged on CPU time: indexed >= 20x naive and >= 200,000 messages/s (each matched against
all subscriptions) on one core. Exit status 1 when the index and naive evaluation disagree.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from rockmq.filter.index import SubscriptionIndex, naive_match
from rockmq.filter.sql import SqlFilter, compile_sql

REGIONS = ["north", "south", "east", "west", "central"]
CHANNELS = ["app", "web", "store", "partner"]
COUNTRIES = ["DE", "FR", "NL", "PL", "XX"]
SPEEDUP_TARGET, RATE_TARGET = 20.0, 200_000.0


def subscription(rng: random.Random, types: list[str], buyers: int) -> str:
    lo = rng.choice([10, 50, 100, 250])
    extras = [
        f"amount > {rng.choice([10, 50, 100, 250, 500])}.0",
        f"amount BETWEEN {lo}.0 AND {lo + rng.choice([100, 250, 500])}.5",
        "region IN (" + ", ".join(f"'{r}'" for r in rng.sample(REGIONS, rng.randint(1, 3))) + ")",
        "(" + " OR ".join(f"channel = '{c}'" for c in rng.sample(CHANNELS, 2)) + ")",
        f"priority >= {rng.randint(1, 5)}",
        "vip = 'true'",
        f"country <> '{rng.choice(COUNTRIES)}'",
    ]
    conditions = [f"MessageType = '{rng.choice(types)}'", f"buyerId = {rng.randint(1, buyers)}"]
    conditions += rng.sample(extras, rng.randint(1, 3))
    rng.shuffle(conditions)
    return " AND ".join(conditions)


def message(rng: random.Random, types: list[str], buyers: int) -> dict[str, str]:
    return {
        "MessageType": rng.choice(types),
        "buyerId": str(rng.randint(1, buyers)),
        "amount": f"{rng.uniform(1, 1000):.2f}",
        "region": rng.choice(REGIONS),
        "channel": rng.choice(CHANNELS),
        "priority": str(rng.randint(1, 5)),
        "vip": rng.choice(["true", "false"]),
        "country": rng.choice(COUNTRIES),
        "traceId": f"{rng.getrandbits(64):016x}",
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subscriptions", type=int, default=5000)
    ap.add_argument("--types", type=int, default=2000, help="distinct MessageType values")
    ap.add_argument("--buyers", type=int, default=20, help="distinct buyerId values")
    ap.add_argument("--messages", type=int, default=200_000, help="messages matched through the index")
    ap.add_argument("--naive-messages", type=int, default=300, help="messages evaluated against every subscription")
    ap.add_argument("--distinct", type=int, default=20_000, help="distinct messages generated (cycled)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    types = [f"T{i:04d}" for i in range(args.types)]

    t0 = time.perf_counter()
    subs: dict[str, SqlFilter] = {
        f"group-{i}": compile_sql(subscription(rng, types, args.buyers)) for i in range(args.subscriptions)}
    t1 = time.perf_counter()
    index = SubscriptionIndex(indexed_fields=("MessageType", "TAGS"))
    for key, flt in subs.items():
        index.add(key, flt)
    t2 = time.perf_counter()
    stats = index.stats()
    example = next(iter(subs.values()))
    print(f"{args.subscriptions} subscriptions over {args.types} message types, e.g. {example.expression}")
    print(f"  compile {(t1 - t0) * 1e6 / len(subs):.0f} us each, index add {(t2 - t1) * 1e6 / len(subs):.0f} us each; "
          f"{stats['bucket_entries']} indexed in {stats['buckets']} buckets, {stats['scanned']} scanned for every message")

    messages = [message(rng, types, args.buyers) for _ in range(min(args.distinct, args.messages))]
    naive_n = min(args.naive_messages, len(messages))

    # naive: every subscription evaluated for each message
    c0, t0 = time.process_time(), time.perf_counter()
    naive_results = [naive_match(subs, props, None) for props in messages[:naive_n]]
    naive_s, naive_cpu = time.perf_counter() - t0, time.process_time() - c0
    naive_rate = naive_n / naive_cpu

    mismatches = sum(sorted(index.match(props, None)) != sorted(expected)
                     for props, expected in zip(messages, naive_results))

    # indexed: one dict lookup and the residuals of the message's bucket
    match = index.match
    batch = len(messages)
    rounds, rest = divmod(args.messages, batch)
    matched = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        for props in messages:
            matched += len(match(props, None))
    for props in messages[:rest]:
        matched += len(match(props, None))
    indexed_s, indexed_cpu = time.perf_counter() - t0, time.process_time() - c0
    indexed_rate = args.messages / indexed_cpu
    speedup = indexed_rate / naive_rate
    candidates = args.subscriptions / args.types

    print(f"naive:   {naive_rate:>12,.0f} messages/s CPU, {naive_n / naive_s:,.0f} wall "
          f"({naive_rate * len(subs):,.0f} subscription checks/s; {naive_n} messages in {naive_cpu:.2f} s CPU)")
    print(f"indexed: {indexed_rate:>12,.0f} messages/s CPU, {args.messages / indexed_s:,.0f} wall "
          f"({indexed_rate * len(subs):,.0f} subscription checks/s equivalent; {args.messages} messages in "
          f"{indexed_cpu:.2f} s CPU; ~{candidates:.1f} residuals per message; {matched / args.messages:.3f} matches per message)")
    print(f"speedup: {speedup:>12,.0f} x")
    print(f"target indexed >= {SPEEDUP_TARGET:.0f}x naive:          {speedup:,.0f}x  {verdict(speedup >= SPEEDUP_TARGET)}")
    print(f"target >= {RATE_TARGET:,.0f} messages/s on one core: {indexed_rate:,.0f}  {verdict(indexed_rate >= RATE_TARGET)}")
    if mismatches:
        print(f"ERROR: the index and naive evaluation disagree on {mismatches} of {naive_n} messages")
        return 1
    print(f"index and naive evaluation agree on all {naive_n} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
