"""What rockmq makes per process is made again in a forked child: message ids (a child with its
parent's ids would have its messages dropped by the broker's de-duplication) and gRPC channels
(they do not survive fork)."""

from __future__ import annotations

import asyncio
import os

import pytest

from rockmq.client import sync
from rockmq.plumbing.channels import ChannelCache
from rockmq.protocol.message_id import new_message_id

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _in_child(work) -> str:
    """Run `work()` in a forked child; -> what it returned (a str)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, work().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


def test_parent_and_child_make_different_message_ids():
    new_message_id()  # the generator is in use before the fork
    child = _in_child(lambda: ",".join(new_message_id() for _ in range(3))).split(",")
    parent = [new_message_id() for _ in range(3)]
    assert len(child) == 3 and not set(child) & set(parent)
    assert child[0][:18] != parent[0][:18], "the child kept its parent's pid in the id prefix"


def test_a_channel_cache_is_empty_in_a_forked_child():
    opened: list[str] = []

    def open_(endpoint: str) -> str:
        opened.append(f"{os.getpid()}:{endpoint}")
        return opened[-1]

    cache = ChannelCache(open_)
    made_here = cache.get("127.0.0.1:1")
    assert cache.get("127.0.0.1:1") is made_here
    in_child = _in_child(lambda: cache.get("127.0.0.1:1"))
    assert in_child != made_here and not in_child.startswith(f"{os.getpid()}:"), "the child reused its parent's channel"
    assert cache.get("127.0.0.1:1") is made_here, "the parent keeps its channel"


def test_the_sync_clients_loop_runs_again_in_a_forked_child():
    """fork() copies only the calling thread: the parent's loop thread is not in the child."""

    async def where() -> str:
        return str(os.getpid())

    def run_on_loop() -> str:
        return asyncio.run_coroutine_threadsafe(where(), sync._background_loop()).result(5)

    assert run_on_loop() == str(os.getpid())
    child = _in_child(run_on_loop)
    assert child and child != str(os.getpid())
