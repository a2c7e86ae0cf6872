"""The official client (`rocketmq`) and rockmq's protocol modules load together in one process, in either order.

Both define the `apache.rocketmq.v2` messages; each order runs in a fresh interpreter so the
import order is real (pytest itself may already have imported one of them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

IMPORTS = {
    "rocketmq-first": "import rocketmq\nimport rockmq.protocol\n",
    "rockmq-first": "import rockmq.protocol\nimport rocketmq\n",
}

# After both imports: both message sets work and are wire-compatible in both directions.
CHECK = r"""
from rocketmq import Message as ClientMessage, Producer, SimpleConsumer
from rocketmq.grpc_protocol import definition_pb2 as theirs, service_pb2 as their_rpc
from rockmq.protocol import pb as ours, rpc as our_rpc

m = ours.Message(body=b"payload", user_properties={"k": "v"})
m.topic.name = "t"
m.system_properties.tag = "TagA"
m.system_properties.keys.extend(["k1", "k2"])
m.system_properties.message_id = "0102FC00000001"
m.system_properties.message_type = ours.FIFO
m.system_properties.message_group = "g"
m.system_properties.delivery_attempt = 2
m.system_properties.body_encoding = ours.IDENTITY
back = theirs.Message.FromString(m.SerializeToString())
assert back.body == b"payload" and back.topic.name == "t", back
assert back.system_properties.tag == "TagA" and list(back.system_properties.keys) == ["k1", "k2"]
assert back.system_properties.message_type == theirs.FIFO and back.system_properties.delivery_attempt == 2
assert dict(back.user_properties) == {"k": "v"}
assert ours.Message.FromString(back.SerializeToString()) == m

req = their_rpc.ReceiveMessageRequest(batch_size=7)
req.group.name = "grp"
req.invisible_duration.seconds = 5
parsed = our_rpc.ReceiveMessageRequest.FromString(req.SerializeToString())
assert parsed.batch_size == 7 and parsed.group.name == "grp" and parsed.invisible_duration.seconds == 5

assert ours.TransactionResolution.Value("COMMIT") == theirs.TransactionResolution.Value("COMMIT") == 1
assert ours.Code.Value("INVALID_RECEIPT_HANDLE") == theirs.Code.Value("INVALID_RECEIPT_HANDLE") == 40013
cm = ClientMessage(); cm.topic = "t"; cm.body = b"x"; cm.tag = "a"
import rocketmq, rockmq.protocol  # still importable, nothing reloaded
print("OK")
"""


@pytest.mark.parametrize("order", sorted(IMPORTS))
def test_rocketmq_and_rockmq_protocol_import_together(order):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    code = IMPORTS[order] + CHECK
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        f"{order}: exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")
