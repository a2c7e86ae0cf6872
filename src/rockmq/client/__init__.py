"""rockmq's own client over the RocketMQ 5 gRPC protocol: an asyncio core with thin synchronous
wrappers that run one event loop in one background thread.

- Producing: `AsyncProducer` / `Producer` (retries with fault avoidance, retry spool, transactions,
  queue selectors, lanes).
- Consuming: `AsyncPushConsumer` / `PushConsumer` (clustering with rebalance, broadcast, or POP),
  `AsyncSimpleConsumer` / `SimpleConsumer` (POP: receive, ack), `AsyncPullConsumer` / `PullConsumer`
  (offsets). Queue allocation strategies in `rockmq.client.allocation`, queue selectors in
  `rockmq.client.selectors`, idempotent handlers in `rockmq.client.idempotent`.

Credentials: every client takes `credentials=Credentials(access_key, secret_key)` (a broker run
with `--auth`): every call and stream is signed as the official clients sign them.
Errors: see `rockmq.client.errors` (one tree; every error says whether it is retriable).
TLS: every client takes `tls=Tls(ca_file)` (`Tls()`: verified against the system's roots).
I/O: every client takes `transport=` (`rockmq.client.transport`): the gRPC one by default, or a
`MockTransport(handler)` that answers calls from a function, for tests without a broker.
"""

from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.errors import RockmqError
from rockmq.client.idempotent import SKIPPED, DuplicateInFlight, Idempotent, RedisStore, RocksDBStore, SQLStore
from rockmq.client.message import Message, ReceivedMessage, SendReceipt
from rockmq.client.producer import AsyncProducer
from rockmq.client.pull import AsyncPullConsumer, PullResult
from rockmq.client.push import AsyncPushConsumer
from rockmq.client.queues import Queue
from rockmq.client.selectors import RoundRobin, at_random, by_hash, by_index
from rockmq.client.spool import DeadEntry
from rockmq.client.sync import Producer, PullConsumer, PushConsumer, SimpleConsumer, Transaction
from rockmq.client.transaction import AsyncTransaction, TransactionResolution
from rockmq.client.transport import Call, GrpcTransport, MockTransport, Transport
from rockmq.plumbing.channels import Tls
from rockmq.plumbing.credentials import Credentials

__all__ = ["SKIPPED", "AsyncProducer", "AsyncPullConsumer", "AsyncPushConsumer", "AsyncSimpleConsumer", "AsyncTransaction",
           "Call", "Credentials", "DeadEntry", "DuplicateInFlight", "Filter", "GrpcTransport", "Idempotent", "Message",
           "MockTransport", "Producer", "PullConsumer", "PullResult", "PushConsumer", "Queue", "ReceivedMessage", "RedisStore",
           "RockmqError", "RocksDBStore", "RoundRobin", "SQLStore", "SendReceipt", "SimpleConsumer", "Tls", "Transaction",
           "TransactionResolution", "Transport", "at_random", "by_hash", "by_index"]
