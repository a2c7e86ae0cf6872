"""rockmq: a RocketMQ-style message queue in Python.

Brokers store topics (split into ordered queues) in RocksDB and speak the Apache RocketMQ 5
gRPC protocol, so the official RocketMQ clients work unchanged. See README.md for a tour.
"""

from rockmq import compiled

__version__ = "0.1.0"

compiled.install()  # before any module of the data path is imported
