"""The disk is full (issue 20 §4.1): a broker whose data directory is a 256 MiB tmpfs.

The tmpfs lives in a private mount namespace (`unshare -rm`) kept by a holder process; each broker
runs inside it (`nsenter`), and the test reaches the files through /proc/HOLDER/root. A filler file
beside the store takes the space. Sends are refused with TOO_MANY_REQUESTS and "disk full" (never
INTERNAL_ERROR), reads go on, the broker says so in one line, and sends resume by themselves once
the filler is gone; SIGTERM and a restart on the full disk exit cleanly; a start on a disk with
room, but less than the reserve, serves reads and refuses sends; no acknowledged message is lost,
and nothing refused is written.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from chaos_scale import scaled
from mqwire import Conn, code_name, message
from waiting import wait_for

from rockmq.protocol import pb

SIZE_MIB = 256
TOPIC, GROUP, PULLER = "disk-full", "disk-full-readers", "disk-full-puller"
QUEUES = 2
BODY = 64 * 1024
RESUME_WITHIN_S = 15.0  # RocksDB retries a store stopped by a failed write every 5 s


class Tmpfs:
    """A tmpfs of SIZE_MIB at `path`, seen only inside a mount namespace a holder process keeps."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.holder = subprocess.Popen(
            ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size={SIZE_MIB}m tmpfs {path} && echo mounted && exec sleep 3600"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.holder.stdout is not None
        said = self.holder.stdout.readline().strip()
        if said != "mounted":
            self.close()
            pytest.skip(f"cannot mount a tmpfs in a private mount namespace here: {said or 'unshare failed'}")
        self.inside = Path(f"/proc/{self.holder.pid}/root{path}")  # the tmpfs, from outside the namespace
        self.launcher = ("nsenter", "--preserve-credentials", "-U", "-m", "-t", str(self.holder.pid))
        self.filler = self.inside / "filler"

    def free(self) -> int:
        st = os.statvfs(self.inside)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Grow the filler until `leave` bytes are free (0: until the file system refuses)."""
        chunk = b"\0" * (1 << 20)
        with open(self.filler, "ab") as f:
            try:
                while (room := self.free() - leave) > 0:
                    f.write(chunk[:room])
                    f.flush()
            except OSError:  # ENOSPC: full
                pass

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait()


@pytest.fixture
def tmpfs(tmp_path: Path):
    if not (shutil.which("unshare") and shutil.which("nsenter")):
        pytest.skip("unshare and nsenter (util-linux) are needed to mount a private tmpfs")
    t = Tmpfs(tmp_path / "mnt")
    yield t
    t.close()


def _send(conn: Conn, body: bytes) -> tuple[int, str, pb.Message]:
    msg = message(TOPIC, body)
    reply = conn.send(msg)
    st = reply.entries[0].status if reply.entries else reply.status
    return st.code, st.message, msg


def _refused_as_full(code: int, text: str, msg: pb.Message, refused: set[str]) -> None:
    assert code == pb.TOO_MANY_REQUESTS and "disk full" in text, f"{code_name(code)}: {text}"
    refused.add(msg.system_properties.message_id)


def _lines(broker: BrokerProcess, since: int, *words: str) -> list[str]:
    return [line for line in list(broker.log)[since:] if all(w in line for w in words)]


def test_disk_full(tmpfs: Tmpfs):
    data = tmpfs.path / "data"
    broker = BrokerProcess(data, launcher=tmpfs.launcher).start()
    conn = Conn(broker.endpoint)
    try:
        conn.create_topic(TOPIC, QUEUES)
        conn.create_group(GROUP)
        body = os.urandom(BODY)
        acked: dict[str, pb.Message] = {}
        refused: set[str] = set()
        for _ in range(scaled(40, 400)):
            code, text, msg = _send(conn, body)
            assert code == pb.OK, text
            acked[msg.system_properties.message_id] = msg
        code, received = conn.receive(GROUP, TOPIC, batch=8)
        assert code == pb.OK and received
        mark = len(broker.log)

        # 1. Nearly full (less free than the broker keeps): sends are refused before anything is
        # written; receives, acks and pulls go on.
        tmpfs.fill(leave=8 << 20)
        deadline = time.monotonic() + 5  # the space is read every second
        while (sent := _send(conn, body))[0] == pb.OK and time.monotonic() < deadline:
            acked[sent[2].system_properties.message_id] = sent[2]
            time.sleep(0.05)
        _refused_as_full(*sent, refused)
        assert conn.ack(GROUP, TOPIC, *received).status.code == pb.OK
        code, more = conn.receive(GROUP, TOPIC, batch=8)
        assert code == pb.OK and more
        code, pulled, _ = conn.pull(PULLER, TOPIC, 0, 0, batch=4)
        assert code == pb.OK and pulled
        said = wait_for(lambda: _lines(broker, mark, "disk full"), 5, what="the broker saying the disk is full")
        assert len(said) == 1, said
        tmpfs.empty()  # room again: the next send goes through
        guard_resumed_s = _resume(conn, body, acked, refused)
        mark = len(broker.log)
        tmpfs.fill(leave=8 << 20)

        # 2. Full to the last byte: sends still refused before writing. Small writes (offset
        # commits) go on until RocksDB finds no room and stops the store: they, and receives (which
        # write), then get "disk full" too, never INTERNAL_ERROR; pulls (which only read) go on.
        tmpfs.fill()
        for _ in range(5):
            _refused_as_full(*_send(conn, body), refused)
        commits: list[pb.Status] = []
        while len(commits) < 5000 and sum(st.code != pb.OK for st in commits[-3:]) < 3:
            commits.append(conn.update_offset(PULLER, TOPIC, 0, len(commits) % 4).status)
        assert {st.code for st in commits} <= {pb.OK, pb.TOO_MANY_REQUESTS}, {code_name(st.code) for st in commits}
        stopped = [st.message for st in commits if st.code == pb.TOO_MANY_REQUESTS]
        assert stopped and "disk full" in stopped[0], "the store never ran out of room"
        code = conn.receive(GROUP, TOPIC, batch=4)[0]
        assert code == pb.TOO_MANY_REQUESTS, code_name(code)
        reply = conn.ack(GROUP, TOPIC, *more)
        assert reply.status.code == pb.TOO_MANY_REQUESTS and "disk full" in reply.status.message, reply
        code, pulled, _ = conn.pull(PULLER, TOPIC, 1, 0, batch=4)
        assert code == pb.OK and pulled
        _refused_as_full(*_send(conn, body), refused)
        full_again = wait_for(lambda: _lines(broker, mark, "disk full"), 5, what="the broker saying the disk is full again")
        time.sleep(0.2)  # any other line it would write
        assert len(_lines(broker, mark, "disk full")) == 1, full_again
        assert not _lines(broker, mark, "Traceback") and not _lines(broker, mark, "ERROR"), list(broker.log)[mark:]

        # 3. Space returns: sends resume by themselves.
        tmpfs.empty()
        resumed_s = _resume(conn, body, acked, refused)
        for _ in range(scaled(20, 200)):
            code, text, msg = _send(conn, body)
            assert code == pb.OK, text
            acked[msg.system_properties.message_id] = msg
        print(f"disk full: the broker said: {said[0]}; sends resumed {guard_resumed_s:.2f} s after space returned "
              f"(refused by the reserve), {resumed_s:.2f} s (after RocksDB stopped the store)")

        # 4. SIGTERM on a full disk: a clean exit, one line; what the memtables held stays in the WAL.
        mark = len(broker.log)
        tmpfs.fill()
        _refused_as_full(*_send(conn, body), refused)
        # Its line may reach the log after the answer (refused by RocksDB, when the space was read
        # before the fill): it is not one of the stop's.
        wait_for(lambda: _lines(broker, mark, "disk full"), 5, what="the broker saying the disk is full")
        conn.close()  # no call left open for the server's stop to wait on
        mark = len(broker.log)
        proc = broker.proc
        assert proc is not None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, list(broker.log)[mark:]
        time.sleep(0.2)  # the log pump catches up
        assert not _lines(broker, mark, "Traceback") and not _lines(broker, mark, "ERROR"), list(broker.log)[mark:]
        said = [line for line in _lines(broker, mark, "WARNING") if "draining" not in line]  # the drain's own line
        assert len(said) <= 1, said
        print(f"disk full: SIGTERM on the full disk: exit 0; the broker said: {said}")

        # 5. A restart on the full disk: one line naming the cause, exit code 1.
        run = subprocess.run([*tmpfs.launcher, sys.executable, "-m", "rockmq", "serve", "--host", "127.0.0.1", "--port", "0",
                              "--data-dir", str(data)], capture_output=True, text=True, timeout=30)
        assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
        assert "Traceback" not in run.stderr + run.stdout, run.stderr
        said = [line for line in run.stderr.splitlines() if " INFO " not in line]
        assert len(said) == 1 and "the disk is full" in said[0], run.stderr
        print(f"disk full: a restart on the full disk says: {said[0]}")

        # 6. Space back: the store opens with everything acknowledged, nothing refused, from its WAL too.
        tmpfs.empty()
        broker.start()
        conn.close()
        conn = Conn(broker.endpoint)
        _all_there(conn, acked, refused)
        assert _send(conn, body)[0] == pb.OK

        # 7. A start on a disk with room, but less than the reserve (32 MiB): the broker starts, says
        # so in one line, serves reads and refuses sends until there is room.
        conn.close()
        broker.stop()
        tmpfs.fill(leave=16 << 20)
        tracebacks = broker.tracebacks
        broker.log.clear()
        broker.start()
        conn = Conn(broker.endpoint)
        _refused_as_full(*_send(conn, body), refused)
        code, pulled, _ = conn.pull(PULLER, TOPIC, 0, 0, batch=4)
        assert code == pb.OK and pulled
        code, received = conn.receive(GROUP, TOPIC, batch=4)
        assert code == pb.OK and received
        said = wait_for(lambda: [line for line in broker.log if "disk full" in line], 5,
                        what="the broker saying it started on a full disk")
        assert len(said) == 1 and "MiB free" in said[0], said
        tmpfs.empty()
        _resume(conn, body, acked, refused)
        _all_there(conn, acked, refused)
        assert broker.tracebacks == tracebacks
        print(f"disk full: a start under the reserve says: {said[0]}")
    finally:
        conn.close()
        broker.kill()


def _resume(conn: Conn, body: bytes, acked: dict[str, pb.Message], refused: set[str]) -> float:
    """Send until one is taken (every refusal "disk full") -> seconds it took."""
    t0 = time.monotonic()
    while (sent := _send(conn, body))[0] != pb.OK:
        _refused_as_full(*sent, refused)
        assert time.monotonic() - t0 < RESUME_WITHIN_S, "sends did not resume once space returned"
        time.sleep(0.1)
    acked[sent[2].system_properties.message_id] = sent[2]
    return time.monotonic() - t0


def _all_there(conn: Conn, acked: dict[str, pb.Message], refused: set[str]) -> None:
    """Every acknowledged message stored as sent, queues dense, no refused send written."""
    stored = {}
    for q in range(QUEUES):
        msgs = conn.pull_all(TOPIC, q)
        assert [m.system_properties.queue_offset for m in msgs] == list(range(len(msgs))), f"queue {q} has gaps"
        stored.update((m.system_properties.message_id, m.body) for m in msgs)
    lost = [mid for mid in acked if mid not in stored]
    assert not lost, f"{len(lost)} acknowledged messages lost"
    assert all(stored[mid] == m.body for mid, m in acked.items())
    assert not refused & stored.keys(), "a refused send was written"
