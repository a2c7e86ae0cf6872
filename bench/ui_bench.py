"""How long each dashboard page takes with many topics and groups (issue 31 wants under 300 ms with 1,000
of each): a fresh broker of this tree with --http-port, N topics and N groups created through the admin
service, each group with a position on one topic (the first topic: 100 groups); then what the idle broker
spends on CPU over --idle seconds with nobody looking (the overview's charts read its totals every 5 s
regardless: ui/history.py); then each page fetched --rounds times.
Then the Access page: a broker with --auth, --users users each with an ACL entry, fetched logged in as a super user.

    python bench/ui_bench.py [--topics 1000] [--groups 1000] [--users 1000] [--rounds 5] [--idle 60]

Prints the idle CPU, and per page the median and the slowest of the rounds, in ms.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

from trees import HERE, start

from rockmq.auth.users import Users
from rockmq.client import Credentials, Message, Producer
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import acl, acl_grpc, admin, admin_grpc, users, users_grpc

ADMIN = Credentials("bench-admin", "bench-admin-secret")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def populate(endpoint: str, topics: int, groups: int) -> str:
    """`topics` topics of 2 queues and `groups` groups, created 16 at a time, each group reset to the earliest
    message of one topic (a position there); one message in the first topic (key bench-key): its id."""
    with open_channel(endpoint) as channel:
        stub = admin_grpc.AdminStub(channel)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: stub.CreateTopic(admin.CreateTopicRequest(name=f"bench-t{i:04}", queue_count=2),
                                                     timeout=30), range(topics)))
            list(pool.map(lambda i: stub.CreateGroup(admin.CreateGroupRequest(name=f"bench-g{i:04}"), timeout=30),
                          range(groups)))
            list(pool.map(lambda i: stub.ResetOffset(admin.ResetOffsetRequest(
                group=f"bench-g{i:04}", topic=f"bench-t{0 if i < 100 else i % topics:04}", to="earliest"), timeout=30),
                range(groups)))
    with Producer(endpoint) as p:
        return p.send(Message("bench-t0000", b'{"x": 1}', keys=["bench-key"])).message_id


def populate_access(endpoint: str, count: int) -> None:
    """`count` users, each granted Sub on a topic of its own, created 16 at a time as ADMIN."""
    with open_channel(endpoint) as channel:
        people, grants = users_grpc.UsersStub(channel), acl_grpc.AclsStub(channel)

        def one(i: int) -> None:
            people.CreateUser(users.CreateUserRequest(name=f"bench-u{i:04}", secret=f"bench-secret-{i}"), timeout=30,
                              metadata=ADMIN.headers())
            grants.GrantAcl(acl.AclEntry(user=f"bench-u{i:04}", resource=f"Topic:bench-t{i:04}", actions=["Sub"],
                                         decision="Allow"), timeout=30, metadata=ADMIN.headers())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(one, range(count)))


def session_cookie(port: int) -> str:
    """Log in to the dashboard as ADMIN -> the session cookie."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/ui/login", body=urlencode({"access_key": ADMIN.access_key, "secret": ADMIN.secret_key}),
                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        reply = conn.getresponse()
        assert reply.status == 303, reply.read()
        return reply.getheader("Set-Cookie", "").split(";")[0]
    finally:
        conn.close()


def fetch_ms(url: str, cookie: str = "") -> float:
    began = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {}),
                                timeout=60) as r:
        r.read()
        assert r.status == 200, url
    return (time.perf_counter() - began) * 1000


def cpu_s(pid: int) -> float:
    """The process's user + system CPU seconds so far (Linux: /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    http = free_port()
    with tempfile.TemporaryDirectory(prefix="rockmq-ui-bench-") as tmp:
        proc, endpoint = start(HERE, Path(tmp) / "data", "--http-port", str(http))
        try:
            began = time.monotonic()
            message_id = populate(endpoint, args.topics, args.groups)
            print(f"{args.topics} topics, {args.groups} groups created in {time.monotonic() - began:.1f} s")
            time.sleep(5)  # the creation's own work settles
            before = cpu_s(proc.pid)
            time.sleep(args.idle)
            used = cpu_s(proc.pid) - before
            print(f"idle, nobody looking: {used * 1000:.0f} ms CPU in {args.idle:.0f} s ({used / args.idle:.2%} of a core)")
            base = f"http://127.0.0.1:{http}"
            for path in ("/ui/", "/ui/api/overview", "/ui/topics", "/ui/topics?page=20", "/ui/topics/bench-t0000",
                         "/ui/groups", "/ui/groups/bench-g0000", "/ui/messages?topic=bench-t0000&key=bench-key",
                         "/ui/messages?topic=bench-t0000&from=2000-01-01T00:00:00Z",
                         f"/ui/messages/{message_id}?topic=bench-t0000&view=json"):
                report(path, [fetch_ms(base + path) for _ in range(args.rounds)])
        finally:
            proc.terminate()
            proc.wait()
        bench_access(Path(tmp) / "auth", args.users, args.rounds)


def bench_access(data: Path, count: int, rounds: int) -> None:
    """The Access page of a broker with --auth and `count` users and ACL entries."""
    Users(data).create(ADMIN.access_key, ADMIN.secret_key, super_user=True)
    http_port = free_port()
    proc, endpoint = start(HERE, data, "--http-port", str(http_port), "--auth")
    try:
        began = time.monotonic()
        populate_access(endpoint, count)
        print(f"{count} users and ACL entries created in {time.monotonic() - began:.1f} s")
        cookie = session_cookie(http_port)
        for path in ("/ui/access", "/ui/access?page=10", f"/ui/access?filter=bench-u{count - 1:04}"):
            report(path, [fetch_ms(f"http://127.0.0.1:{http_port}{path}", cookie) for _ in range(rounds)])
    finally:
        proc.terminate()
        proc.wait()


def report(path: str, times: list[float]) -> None:
    print(f"{path:60} median {statistics.median(times):7.1f} ms   max {max(times):7.1f} ms")


if __name__ == "__main__":
    main()
