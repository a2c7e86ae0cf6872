"""AsyncPushConsumer, the façade: it checks the options, wires the parts (each given its
collaborators when made) and runs the lifecycle; the package's docstring says what each mode does."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from rockmq.client.allocation import Strategy, average
from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.limits import HEARTBEAT_S, INVISIBLE_S, LITE_REFRESH_S, LONG_POLL_S, PUSH_BATCH_SIZE, REQUEST_TIMEOUT_S
from rockmq.client.lite import LiteSubscriptions, parent_topic
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.push.assignment import Assignment
from rockmq.client.push.commits import Committer
from rockmq.client.push.dispatch import Dispatcher
from rockmq.client.push.fetcher import Fetcher
from rockmq.client.push.handler import Handler, HandlerRunner
from rockmq.client.push.membership import Membership
from rockmq.client.push.owned import QueueStats
from rockmq.client.push.pop import PopLoops
from rockmq.client.push.settlement import Settlement
from rockmq.client.queues import Queue, queue_order
from rockmq.client.session import Endpoints
from rockmq.client.transport import GrpcTransport, Transport
from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import pb
from rockmq.protocol.conventions import RETRY_LADDER_S, check_lane, lane_group, retry_topic

MODES = ("clustering", "broadcast", "pop")


def _check(mode: str, subscriptions: Mapping[str, str | Filter], offset_file: str | None, start_from: str,
           positive: Sequence[int], retry_backoff_s: Sequence[float]) -> None:
    """Refuse options that cannot work, before anything is made."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "broadcast" and not offset_file:
        raise ValueError("broadcast mode keeps offsets locally: give offset_file")
    if start_from not in ("earliest", "latest"):
        raise ValueError(f"start_from must be 'earliest' or 'latest', not {start_from!r}")
    if min(positive) < 1 or not retry_backoff_s:
        raise ValueError("concurrency, cache limits and batch_size must be positive; retry_backoff_s non-empty")
    if not subscriptions:
        raise ValueError("subscribe to at least one topic")


class AsyncPushConsumer:
    """Calls `handler` for every message of the subscribed topics, from `start()` until `close()`.

    The parts: membership (heartbeats, members), assignment (which queues, rebalance), fetcher (pulls
    within flow control), dispatcher (handler workers), settlement (retries, send-backs), committer
    (offsets); in POP mode the POP loops instead of the offset-based four."""

    def __init__(self, endpoint: Endpoints, group: str, subscriptions: Mapping[str, str | Filter], handler: Handler, *,
                 mode: str = "clustering", strategy: Strategy = average, orderly: bool = False, concurrency: int = 16,
                 max_cached_messages: int = 1000, max_cached_bytes: int = 100 * 1024 * 1024, batch_size: int = PUSH_BATCH_SIZE,
                 poll_s: float = LONG_POLL_S, heartbeat_s: float = HEARTBEAT_S, rebalance_s: float = 20.0,
                 commit_interval_s: float = 5.0, retry_backoff_s: Sequence[float] = RETRY_LADDER_S,
                 max_attempts: int | None = None, start_from: str = "earliest", offset_file: str | None = None,
                 invisible_s: float = INVISIBLE_S, lane: str | None = None, lane_fallback: bool = True,
                 shutdown_timeout_s: float = 10.0, request_timeout: float = REQUEST_TIMEOUT_S, client_id: str | None = None,
                 transport: Transport | None = None, credentials: Credentials | None = None,
                 tls: Tls | None = None, lite_refresh_s: float = LITE_REFRESH_S) -> None:
        _check(mode, subscriptions, offset_file, start_from, (concurrency, max_cached_messages, max_cached_bytes, batch_size),
               retry_backoff_s)
        self.group = group
        self.lane = check_lane(lane)
        # POP: the broker routes lanes within the group's one state; offsets: each lane keeps its own
        self.state_group = group if mode == "pop" else lane_group(group, self.lane)
        self.subscriptions = {t: f if isinstance(f, Filter) else Filter.tag(f) for t, f in subscriptions.items()}
        self.handler = handler
        self.mode, self.strategy, self.orderly = mode, strategy, orderly
        self.concurrency, self.batch_size = concurrency, batch_size
        self.max_cached_messages, self.max_cached_bytes = max_cached_messages, max_cached_bytes
        self.poll_s, self.heartbeat_s, self.rebalance_s = poll_s, heartbeat_s, rebalance_s
        self.commit_interval_s, self.shutdown_timeout_s = commit_interval_s, shutdown_timeout_s
        self.retry_backoff_s = tuple(retry_backoff_s)
        self.max_attempts = max_attempts
        self.start_from, self.invisible_s, self.lane_fallback = start_from, invisible_s, lane_fallback
        self._transport = transport or GrpcTransport(tls)  # shared by the pull and POP consumers
        self._owns_transport = transport is None
        self._pull = AsyncPullConsumer(endpoint, group, request_timeout=request_timeout, client_id=client_id,
                                       lane=self.lane, transport=self._transport, credentials=credentials)
        self.credentials = credentials
        self.session = self._pull.session
        self.client_id = self.session.client_id
        self.lite = LiteSubscriptions(self.session, group, pb.PUSH_CONSUMER, lite_refresh_s)
        self._wire(offset_file)
        self._pop: PopLoops | None = None  # POP mode, once started
        self._loops: list[asyncio.Task[None]] = []
        self._started = self._closed = False

    def _wire(self, offset_file: str | None) -> None:
        """Make the parts, each with its collaborators."""
        self._runner = HandlerRunner(self.handler, self.concurrency)
        self._settlement = Settlement(self._runner, self.session, group=self.group, state_group=self.state_group,
                                      mode=self.mode, orderly=self.orderly, retry_backoff_s=self.retry_backoff_s,
                                      max_attempts=self.max_attempts)
        self._dispatcher = Dispatcher(self._settlement, orderly=self.orderly, concurrency=self.concurrency)
        fetcher = Fetcher(self._pull, self._dispatcher.dispatch, group=self.group, subscriptions=self.subscriptions,
                          lane=self.lane, lane_fallback=self.lane_fallback, batch_size=self.batch_size,
                          max_cached_messages=self.max_cached_messages, max_cached_bytes=self.max_cached_bytes,
                          poll_s=self.poll_s)
        self._committer = Committer(self._pull, group=self.group, offset_file=offset_file,
                                    interval_s=self.commit_interval_s)
        self._membership = Membership(self.session, self._pull.queues, group=self.group, lane=self.lane,
                                      heartbeat_s=self.heartbeat_s, rebalance_s=self.rebalance_s,
                                      client_type=lambda: self.lite.client_type)
        topics = [*self.subscriptions, retry_topic(self.state_group)] if self.mode == "clustering" else list(self.subscriptions)
        self._assignment = Assignment(self._pull, self._membership, self._committer, fetcher, self._dispatcher,
                                      group=self.group, mode=self.mode, topics=topics, strategy=self.strategy,
                                      start_from=self.start_from, handover_s=self.heartbeat_s * 1.5,
                                      release_grace_s=min(self.shutdown_timeout_s, self.commit_interval_s))

    async def __aenter__(self) -> AsyncPushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Join the group, take this member's queues and start consuming."""
        if self._started:
            return
        self._started = True
        self._runner.start()
        self.max_attempts = await self._settlement.resolve_max_attempts()
        await self._committer.load()
        await self._membership.join(self.subscriptions)
        if self.mode == "pop":
            self._pop = PopLoops(self._simple_consumer(), self._runner, group=self.group, concurrency=self.concurrency,
                                 batch_size=self.batch_size, invisible_s=self.invisible_s,
                                 retry_backoff_s=self.retry_backoff_s)
            self._pop.start()
        else:
            self._dispatcher.start()
            await self._assignment.rebalance()
            self._loops.append(asyncio.create_task(self._committer.run(self._assignment.owned), name="rockmq-commit"))
        rebalance = None if self.mode == "pop" else self._assignment.rebalance
        self._loops.append(asyncio.create_task(self._membership.run(rebalance), name="rockmq-membership"))

    async def subscribe_lite(self, name: str, topic: str | None = None) -> None:
        """Receive lite topic `name` of the subscribed LITE topic (`topic`: needed only when the
        consumer subscribes several); lite topics are served by POP: mode "pop" only. A lite
        topic's messages reach the handler one at a time, in order (docs/client.md "Lite topics")."""
        if self.mode != "pop":
            raise ValueError(f"lite topics are received by POP: make the consumer with mode='pop', not {self.mode!r}")
        await self.lite.subscribe(parent_topic(self.subscriptions, topic), name)

    async def unsubscribe_lite(self, name: str, topic: str | None = None) -> None:
        """Stop receiving lite topic `name`."""
        await self.lite.unsubscribe(parent_topic(self.subscriptions, topic), name)

    def _simple_consumer(self) -> AsyncSimpleConsumer:
        """POP mode's receiver: the group's one POP state, over this consumer's transport and session settings."""
        return AsyncSimpleConsumer(self.session.access_points, self.state_group, dict(self.subscriptions),
                                   await_s=self.poll_s, request_timeout=self.session.request_timeout_s,
                                   client_id=self.client_id, lane=self.lane, transport=self._transport,
                                   credentials=self.credentials)

    async def close(self) -> None:
        """Stop pulling, let running handlers finish (up to shutdown_timeout_s), commit, leave the group."""
        if self._closed:
            return
        self._closed = True
        loops = [*self._loops, *self._assignment.shut()]
        if self._pop is not None:
            self._pop.shut()
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        owned = list(self._assignment.owned.values())
        await self._assignment.stop(owned, self.shutdown_timeout_s)
        await self._dispatcher.close()
        if self._pop is not None:
            await self._pop.close(self.shutdown_timeout_s)
        await self.lite.close()
        await self._committer.commit_all(owned)
        await self._membership.leave()
        await self._pull.close()
        if self._owns_transport:
            await self._transport.close()
        self._runner.close()

    @property
    def assignment(self) -> list[Queue]:
        """The queues this member reads now (clustering: its share; broadcast: all)."""
        return sorted(self._assignment.owned, key=queue_order)

    def stats(self) -> dict[Queue, QueueStats]:
        return {q: o.stats() for q, o in self._assignment.owned.items()}
