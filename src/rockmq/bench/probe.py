"""The broker's PID, CPU and memory, read from /proc: what a scenario's figures are charged to.

`--broker-pid` names the broker; without it the bench looks for the process listening on the
endpoint's port (LISTEN sockets in /proc/net/tcp{,6}, matched to /proc/PID/fd socket inodes). A
broker's child processes (shards, helpers) are counted with it.
"""

from __future__ import annotations

import ipaddress
import os
import time
from dataclasses import dataclass
from pathlib import Path

LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp
PROC = Path("/proc")


@dataclass(frozen=True)
class Sample:
    rss_kib: int  # summed over the broker and its descendants
    cpu_s: float  # user + system, ditto

    @property
    def rss_mib(self) -> float:
        return mib(self.rss_kib)


def mib(kib: int) -> float:
    """KiB -> MiB as the bench reports it."""
    return round(kib / 1024, 1)


def listen_inodes(table: str, port: int) -> set[str]:
    """Socket inodes LISTENing on `port` (any address) in the text of a /proc/net/tcp{,6} table."""
    inodes = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(fields[9])
    return inodes


def listening_pids(port: int, proc: Path = PROC) -> set[int]:
    """PIDs holding a listening TCP socket on `port`; processes we may not inspect are skipped."""
    inodes: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            inodes |= listen_inodes((proc / "net" / name).read_text(), port)
        except OSError:
            continue
    targets = {f"socket:[{inode}]" for inode in inodes}
    found = set()
    for entry in proc.iterdir() if targets else ():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in targets for fd in (entry / "fd").iterdir()):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def loopback_port(endpoint: str) -> int | None:
    """The port of a loopback `host:port` endpoint (None for any other host)."""
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return None
    return int(port) if loopback and port.isdigit() else None


def find_broker(endpoint: str, wait_s: float = 0.0, proc: Path = PROC) -> tuple[int | None, str]:
    """(the PID listening on the endpoint, or None and why not); waits up to `wait_s` for a broker
    that is still starting (`rockmq serve ... &` pasted right before the bench)."""
    port = loopback_port(endpoint)
    if port is None:
        return None, f"{endpoint} is not a loopback address: give --broker-pid for broker CPU and RSS"
    deadline = time.monotonic() + wait_s
    while not (pids := listening_pids(port, proc)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not pids:
        return None, f"no process of ours listens on port {port} (not started, or another user's): give --broker-pid"
    if len(pids) > 1:
        return None, f"several processes listen on port {port} ({', '.join(map(str, sorted(pids)))}): give --broker-pid"
    pid = pids.pop()
    return pid, f"broker PID {pid}: listens on port {port}"


def _parent(pid: int, proc: Path) -> int | None:
    try:
        return int((proc / str(pid) / "stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def family(pid: int, proc: Path = PROC) -> set[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit() and (ppid := _parent(int(entry.name), proc)) is not None:
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(children.get(p, ()))
    return out


def _one(pid: int, proc: Path) -> tuple[int, float]:
    with open(proc / str(pid) / "status") as status:
        rss = next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
    fields = (proc / str(pid) / "stat").read_text().rpartition(")")[2].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def broker_sample(pid: int, proc: Path = PROC) -> Sample | None:
    """RSS and CPU of the broker and its descendants, or None if the broker is gone."""
    try:
        rss, cpu = _one(pid, proc)
    except (OSError, IndexError, ValueError):
        return None
    for child in family(pid, proc) - {pid}:
        try:
            more = _one(child, proc)
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        rss, cpu = rss + more[0], cpu + more[1]
    return Sample(rss, cpu)
