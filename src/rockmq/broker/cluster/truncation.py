"""Truncating a former primary's tail: the batches it wrote after its successor's epoch began, which
the group's history does not hold (issue 30 §3; docs/cluster.md "Automatic failover").

A primary that lost its role (paused, cut off from the coordinator) may have written batches its
replicas never got: under sync replication none was acknowledged (every acknowledged batch is on
every member of the in-sync set, from which the next primary is elected). The new primary's history
numbers its own batches from where its epoch began (`fencing.diverged_after`), so the same numbers
name other batches on the two: the former primary must drop its tail before it follows.

The divergence point is the new primary's: the batch after which the first epoch above the former
primary's began (as Kafka's leader-epoch checkpoints: the new leader knows where its epoch started).
Follow refuses the former primary with it (trailing metadata, beside the too-far-behind mark an
older replica re-seeds on). The former primary holds the footprints of its own batches (the keys
each touched, store/footprints.py): it follows again from the divergence point, sending those of
its tail, and the primary answers with one catch-up batch that sets every key the tail touched to
the value it holds (deleted where it holds none; a range the tail deleted refilled with what it
holds there) besides the keys of its own batches since. Applied atomically, the former primary then
holds exactly what the primary holds: messages, index entries, POP checkpoints, timers, offsets,
de-dup and transaction entries alike, whatever family the tail wrote. Where the tail cannot be told
(its footprints not all kept, over TAIL_MAX_BYTES) or the primary cannot send the values (its own
footprints not reaching back, over its catch-up limit), the full re-copy (reseed.py) is the fallback.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import grpc

from rockmq.broker.metadata import TopicConfig
from rockmq.store import Store, footprints, keys, oplog
from rockmq.store.oplog import PUT, Op
from rockmq.store.schema import Family

DIVERGED_AFTER_KEY = "rockmq-diverged-after"  # Follow's refusal of a diverged replica: where the histories part
TAIL_MAX_BYTES = 1 << 20  # a tail's keys sent in one FollowerState; above, the full re-copy instead
ALL_FOOTPRINTS = (oplog.DELETE_RANGE, Family.FOOTPRINTS, b"", b"\xff" * 9)  # those of batches the group no longer holds


def diverged_at(error: grpc.aio.AioRpcError) -> int | None:
    """The divergence point a Follow refusal names (None: not a diverged replica's refusal)."""
    for key, value in error.trailing_metadata() or ():
        if key == DIVERGED_AFTER_KEY and isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def tail(store: Store, after: int, upto: int) -> list[Op] | None:
    """What this store's own batches after `after` up to `upto` touched (keys, no values); None when
    it cannot be told: their footprints are not all kept, or they pass TAIL_MAX_BYTES."""
    ops = footprints.touched(store, after, upto)
    if ops is None or sum(len(op[2]) + len(op[3]) for op in ops) > TAIL_MAX_BYTES:
        return None
    return ops


def dropped(ops: list[Op], topics: Mapping[int, TopicConfig]) -> str:
    """What a tail's truncation drops, for its log line: the messages it appended, by queue (topic
    name, queue, offsets), and how many other entries it wrote, by family."""
    queues: dict[tuple[int, int], list[int]] = defaultdict(list)
    others: dict[str, int] = defaultdict(int)
    for kind, family, key, _ in ops:
        if family == Family.LOG and kind == PUT:
            topic_id, queue_id, offset = keys.parse_log_key(key)
            queues[topic_id, queue_id].append(offset)
        else:
            others[family] += 1
    messages = sum(map(len, queues.values()))
    where = ", ".join(f"{_name(topics, t)}/{q} offsets {min(o)}-{max(o)}" for (t, q), o in sorted(queues.items()))
    rest = ", ".join(f"{family} {n}" for family, n in sorted(others.items()))
    return f"{messages} messages ({where or 'none'}); other entries: {rest or 'none'}"


def _name(topics: Mapping[int, TopicConfig], topic_id: int) -> str:
    topic = topics.get(topic_id)
    return topic.name if topic is not None else f"topic#{topic_id}"
