"""AsyncPushConsumer: hand every message of the subscribed topics to a handler, in one of three modes.

- `clustering` (default; docs/client.md, "Push consumer"): the group's members find each other
  through the broker (heartbeats, then ListMembers), and each one reads the queues a strategy
  (allocation.py) gives it, again every `rebalance_s` and as soon as a member joins or leaves.
  Reading is PullMessage with long polling; progress is committed with UpdateOffset every
  `commit_interval_s`, on rebalance and on close. The committed offset is the smallest one still
  being processed (a sliding window), so a slow message never lets the commit skip it. A message
  whose handler fails is handed back to the broker: a copy goes to the group's retry topic
  `%RETRY%<group>`, delayed by `retry_backoff_s` (the broker moves it to `%DLQ%<group>` once the
  group's attempts are used up), so it never blocks the window. The consumer reads its retry topic
  like any other.
- `broadcast`: every member reads every queue; offsets stay in a local file (`offset_file`). A
  failing message is retried in place up to `max_attempts` times, then logged and skipped.
- `pop`: no rebalance. Messages are received with POP and acked; a failed one comes back after its
  backoff; a member that hangs loses its messages to the others once their invisible time ends.
  A receive takes `batch_size` messages while only `concurrency` handlers run, and a batch is acked
  in one request once its last handler is done, so a message may wait longer than its invisible
  time: every half invisible time a batch still held acks what finished and renews the invisible
  time of the rest (held.py), so nothing that waits here comes back as a duplicate.

`orderly=True` processes one message at a time per queue, in offset order (retrying a failed one
in place before moving on); otherwise up to `concurrency` handlers run at once. Handlers are async
functions or plain functions (run on a pool of `concurrency` threads). Flow control: at most
`max_cached_messages` / `max_cached_bytes` (of bodies) pulled and unfinished per queue; each pull
is sized to what is left (flow.py), and past either limit pulling that queue pauses. Delivery is
at least once (a rebalance or crash may repeat messages past the last commit): pair it with
`rockmq.client.idempotent` where duplicates matter.

The parts, each a class of its own that gets its collaborators when made (consumer.py wires them):

- `consumer.py`: `AsyncPushConsumer`, the façade: options, wiring, start and close.
- `membership.py`: heartbeats, the group's members and live lanes, leaving.
- `assignment.py`: which queues this member reads; rebalance, taking and handing over queues.
- `fetcher.py` and `owned.py`: the pull loops and flow control; one owned queue's state and cache.
- `dispatch.py` and `handler.py`: the handler workers (a pool, or one per queue when orderly); the
  handler's slots and thread pool.
- `settlement.py`, `retries.py` and `commits.py`: what becomes of a failed message (retry in place,
  send back, skip); the retry topic's conventions; committing offsets.
- `pop.py` and `held.py`: POP mode's receive loops, acks and renewal rounds; a held batch.
"""

from rockmq.client.push.consumer import MODES, AsyncPushConsumer
from rockmq.client.push.handler import Handler
from rockmq.client.push.owned import QueueStats
from rockmq.client.push.retries import presented, send_back_copy

__all__ = ["MODES", "AsyncPushConsumer", "Handler", "QueueStats", "presented", "send_back_copy"]
