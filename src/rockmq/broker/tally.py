"""What the broker counts as it works, for /metrics (broker/metrics.py): plain ints in dicts the
services bump once per request (a send's messages per topic and type, a receive's per topic and
group), not per message through prometheus-client's locks. Keyed by topic id (a rename-free,
small key) and group name; bounded by the topics and groups the broker holds (max_topics,
max_groups), and a deleted topic's or group's entries go with it (`forget_topic`, `forget_group`)."""

from __future__ import annotations

import bisect

# rocketmq_message_size's buckets (RocketMQ 5's): 1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB, then +Inf.
SIZE_BUCKETS = (1024, 4096, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)


class Tally:
    __slots__ = ("messages_in", "bytes_in", "messages_out", "bytes_out", "dead_letters", "commits", "rollbacks",
                 "sizes", "size_sum")

    def __init__(self) -> None:
        self.messages_in: dict[tuple[int, str], int] = {}  # (topic id, message type) -> messages stored
        self.bytes_in: dict[tuple[int, str], int] = {}  # ... their bodies' bytes
        self.messages_out: dict[tuple[int, str], int] = {}  # (topic id, group) -> messages handed out
        self.bytes_out: dict[tuple[int, str], int] = {}  # ... their framed bytes
        self.dead_letters: dict[tuple[int, str], int] = {}  # (topic id, group) -> messages sent to the group's DLQ
        self.commits: dict[int, int] = {}  # topic id -> transactional messages committed
        self.rollbacks: dict[int, int] = {}  # ... rolled back
        self.sizes = [0] * (len(SIZE_BUCKETS) + 1)  # messages stored by body size bucket (not cumulative)
        self.size_sum = 0

    def stored(self, topic_id: int, message_type: str, sizes: list[int]) -> None:
        """A send's messages of one topic and type, stored (`sizes`: their bodies' bytes; sorted here).
        Bucketed by bisecting the sorted sizes: C loops, no Python step per message."""
        key = (topic_id, message_type)
        sizes.sort()
        total = sum(sizes)
        buckets = self.sizes
        below = 0
        for i, bound in enumerate(SIZE_BUCKETS):
            at = bisect.bisect_right(sizes, bound)
            buckets[i] += at - below
            below = at
        buckets[-1] += len(sizes) - below
        self.messages_in[key] = self.messages_in.get(key, 0) + len(sizes)
        self.bytes_in[key] = self.bytes_in.get(key, 0) + total
        self.size_sum += total

    def handed_out(self, topic_id: int, group: str, messages: int, size: int) -> None:
        key = (topic_id, group)
        self.messages_out[key] = self.messages_out.get(key, 0) + messages
        self.bytes_out[key] = self.bytes_out.get(key, 0) + size

    def dead_lettered(self, topic_id: int, group: str) -> None:
        key = (topic_id, group)
        self.dead_letters[key] = self.dead_letters.get(key, 0) + 1

    def ended(self, topic_id: int, committed: bool) -> None:
        counts = self.commits if committed else self.rollbacks
        counts[topic_id] = counts.get(topic_id, 0) + 1

    def forget_topic(self, topic_id: int) -> None:
        for table in (self.messages_in, self.bytes_in, self.messages_out, self.bytes_out, self.dead_letters):
            for key in [k for k in table if k[0] == topic_id]:
                del table[key]
        self.commits.pop(topic_id, None)
        self.rollbacks.pop(topic_id, None)

    def forget_group(self, group: str) -> None:
        for table in (self.messages_out, self.bytes_out, self.dead_letters):
            for key in [k for k in table if k[1] == group]:
                del table[key]
