"""`rockmq broker group|elect` against a coordinated group's etcd (src/rockmq/cli/coordinated.py), and
a send's outcome as one code, for tests/cluster and tests/chaos."""

from __future__ import annotations

import json
import subprocess
import sys

import grpc
from mqwire import Conn

from rockmq.protocol import pb


def group_command(etcd_url: str, *args: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
    """`rockmq broker <args> --coordinator <etcd_url>` (group, elect), `answer` on its stdin."""
    return subprocess.run([sys.executable, "-m", "rockmq", "broker", *args, "--coordinator", etcd_url],
                          input=answer, capture_output=True, text=True, timeout=60)


def group_state(etcd_url: str, group: str = "g1") -> dict:
    """`rockmq broker group GROUP --json`, parsed."""
    done = group_command(etcd_url, "group", group, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def send_code(conn: Conn, msg: pb.Message) -> object:
    """A send's status code, or the gRPC error's (a replica refuses writes with FAILED_PRECONDITION)."""
    try:
        return conn.send(msg).status.code
    except grpc.RpcError as e:
        return e.code()
