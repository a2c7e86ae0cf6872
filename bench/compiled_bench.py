"""The compiled data path against the same modules as Python, in-process, interleaved in one run:

    PYTHONPATH=$PWD/src python bench/compiled_bench.py [--rounds 5] [--requests 300]

Each round runs a child process per build (`ROCKMQ_PURE_PYTHON=1` for Python) and prints CPU µs per
message (time.process_time) for
- send: a SendMessage request of 32 × 1 KiB messages read from its bytes (send_request.read: scanned
  compiled, parsed as Python), checked (validate.check_fields), each record built from the slices
  (records.placed), with its log and de-dup keys and value (store/keys.py);
- deliver+ack: a receive of 32 and one ack of them: the checkpoint's token signed once, per message
  its receipt handle and the delivery fields spliced into the record (receipt.handle, records.view,
  delivery_fields, RecordView.message), then each handle split and the token opened once
  (receipt.split, open_token, keys.checkpoint_key).
Medians of the rounds; the broker's CPU per message end to end is `rockmq bench`'s to tell.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 32


def _send(requests: int, size: int) -> float:
    from rockmq.broker import validate
    from rockmq.broker.metadata import TopicConfig
    from rockmq.config import Settings
    from rockmq.protocol import pb, records, rpc, send_request
    from rockmq.protocol.message_id import new_message_id
    from rockmq.store import keys

    class Known:
        topics = {"orders": TopicConfig("orders", 7, 8)}
        groups: dict[str, object] = {}

    known, settings = Known(), Settings()
    template = pb.Message(topic=pb.Resource(name="orders"), body=os.urandom(size // 2).hex().encode(),
                          user_properties={"k": "v", "trace": "abc"},
                          system_properties=pb.SystemProperties(tag="created", keys=["order-1"], message_type=pb.NORMAL,
                                                                born_host="127.0.0.1", born_timestamp={"seconds": 1}))
    wire = template.SerializeToString()

    def message() -> pb.Message:
        m = pb.Message.FromString(wire)
        m.system_properties.message_id = new_message_id()
        return m

    raws = [rpc.SendMessageRequest(messages=[message() for _ in range(BATCH)]).SerializeToString() for _ in range(requests)]
    now = int(time.time() * 1000)
    bucket = now // 60_000
    start = time.process_time()
    for n, raw in enumerate(raws):
        for i, msg in enumerate(send_request.read(raw)):
            mid = msg.message_id
            validate.check_fields(msg.topic, mid, msg.queue_id, len(msg.body), msg.tag, msg.keys, msg.message_group,
                                  msg.user_properties, None, msg.message_type, known, settings, now)
            offset = n * BATCH + i
            record = records.placed(msg.tag, msg.message_group, msg.rest, msg.system_properties, msg.body_encoding, msg.body,
                                    "127.0.0.1:8081", 3, offset, now)
            entry = (keys.log_key(7, 3, offset), record, keys.dedup_key(bucket, 7, mid),
                     keys.dedup_value(3, offset))
            assert entry
    return (time.process_time() - start) / (requests * BATCH) * 1e6


def _deliver_ack(messages: int, size: int) -> float:
    from rockmq.protocol import pb, receipt, records
    from rockmq.store import keys

    msg = pb.Message(topic=pb.Resource(name="orders"), body=b"x" * size,
                     system_properties=pb.SystemProperties(message_id="01" * 17, tag="created"))
    record = records.place(records.seal(msg, "127.0.0.1:8081"), 3, 12345, int(time.time() * 1000))
    secret = b"s" * 32
    start = time.process_time()
    for checkpoint in range(messages // BATCH):  # a receive of BATCH, then one ack of them all
        signed = receipt.token(5, 7, checkpoint, secret)
        handles = [receipt.handle(signed, i) for i in range(BATCH)]
        delivered = [records.view(record).message(records.delivery_fields(h, 1, 30_000)) for h in handles]
        acked = [receipt.split(h) for h in handles]
        located = keys.checkpoint_key(*receipt.open_token(acked[0][0], secret))
        assert delivered and located
    return (time.process_time() - start) / messages * 1e6


def _child(args: argparse.Namespace) -> None:
    from rockmq import compiled

    print(json.dumps({"build": compiled.describe(), "send": _send(args.requests, args.size),
                      "deliver+ack": _deliver_ack(args.requests * BATCH, args.size)}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=300, help="SendMessage requests of 32 per round")
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args)
        return
    runs: dict[str, list[dict[str, float]]] = {"compiled": [], "python": []}
    builds: dict[str, str] = {}
    for _ in range(args.rounds):
        for name, pure in (("compiled", ""), ("python", "1")):
            out = subprocess.run([sys.executable, __file__, "--child", "--requests", str(args.requests), "--size",
                                  str(args.size)], env={**os.environ, "ROCKMQ_PURE_PYTHON": pure}, check=True,
                                 capture_output=True, text=True).stdout
            figures = json.loads(out)
            builds[name] = figures.pop("build")
            runs[name].append(figures)
    for name, build in builds.items():
        print(f"{name}: {build}")
    print(f"{'µs per message':<16}{'python':>10}{'compiled':>10}{'speedup':>10}")
    for path in ("send", "deliver+ack"):
        py, c = (statistics.median(r[path] for r in runs[name]) for name in ("python", "compiled"))
        print(f"{path:<16}{py:>10.2f}{c:>10.2f}{py / c:>9.2f}x")


if __name__ == "__main__":
    main()
