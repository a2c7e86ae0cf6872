"""The client's defaults and limits, one definition each; every one is also a constructor or
method parameter, so tests and applications shrink or widen it there. The redelivery ladder and
default max attempts, which the broker shares, are in protocol/conventions.py; the fault-latency
tables in fault.py; the spool's in spool.py.
"""

from __future__ import annotations

SEND_RETRIES = 2  # a failed send is tried again this often, on another broker when there is one
DELIVERY_TIMEOUT_S = 10.0  # and beyond that, backing off, until this long after its first attempt (sender.py)
RETRY_PAUSE_S = (0.05, 0.5)  # a retry with no broker left to try waits from the first to the last, doubling
BATCH_MAX_MESSAGES = 64  # concurrent sends gathered into one SendMessage request, at most (accumulator.py)
BATCH_MAX_BYTES = 4 * 1024 * 1024  # and at most about this many bytes (one larger message goes alone)
BUFFER_BYTES = 32 * 1024 * 1024  # sends waiting or in flight hold this much at most; more wait for room
MAX_IN_FLIGHT = 8  # gathered requests out to one broker at once (sender.py)
REQUEST_TIMEOUT_S = 3.0  # deadline of a call that does not wait for messages to arrive
ROUTE_TTL_S = 30.0  # a producer's cached route is refreshed (in the background) once this old
ASSIGNMENT_TTL_S = 5.0  # a POP consumer's assignment likewise (a failed receive asks again at once)
BATCH_SIZE = 256  # messages per receive or pull, at most: one reply carries what is there, up to this many
PUSH_BATCH_SIZE = 32  # a push consumer's handlers finish a received batch within its invisible time
INVISIBLE_S = 30.0  # a POP-received message is hidden from the group's other consumers this long
LONG_POLL_S = 10.0  # a receive or pull waits this long for a message to arrive
HEARTBEAT_S = 10.0  # clients tell the brokers they are alive this often
LITE_REFRESH_S = 30.0  # a lite consumer re-sends its whole set of lite subscriptions this often (its liveness)
SYNC_SEND_TIMEOUT_S = 30.0  # the sync producer's limit on one call (a send with all its retries)
SYNC_CONSUME_TIMEOUT_S = 60.0  # the sync consumers' limit on one call (beyond its long poll)
