"""rockmq's own client: an asyncio core (`AsyncProducer`, `AsyncSimpleConsumer`) with thin
synchronous wrappers (`Producer`, `SimpleConsumer`), over the RocketMQ 5 gRPC protocol.

Errors: see `rockmq.client.errors` (one tree; every error says whether it is retriable).
"""

from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.errors import RockmqError
from rockmq.client.message import Message, ReceivedMessage, SendReceipt
from rockmq.client.producer import AsyncProducer
from rockmq.client.selectors import RoundRobin, at_random, by_hash, by_index
from rockmq.client.spool import DeadEntry
from rockmq.client.sync import Producer, SimpleConsumer, Transaction
from rockmq.client.transaction import AsyncTransaction, TransactionResolution

__all__ = ["AsyncProducer", "AsyncSimpleConsumer", "AsyncTransaction", "DeadEntry", "Filter", "Message", "Producer",
           "ReceivedMessage", "RockmqError", "RoundRobin", "SendReceipt", "SimpleConsumer", "Transaction",
           "TransactionResolution", "at_random", "by_hash", "by_index"]
