"""Issue 32 §12: a broker's files are its user's alone, and it writes through no link a local user
planted. `rockmq serve` makes its data directory 0700 and every file in it 0600 (umask 077), makes
an existing looser one 0700 (saying so in one line), and writes its ready file through a
temporary file no planted symlink can redirect."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from broker_process import AUTH_ADMIN, AUTH_ARGS, AUTH_SECRET, BrokerProcess
from mqwire import META, RPC_TIMEOUT, message

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

TOPIC = "local-files"


def _send_a_few(b: BrokerProcess) -> None:
    signed = (*META, *Credentials(AUTH_ADMIN, AUTH_SECRET).headers())
    with open_channel(b.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC), metadata=signed, timeout=RPC_TIMEOUT)
        for i in range(5):
            reply = svc.MessagingServiceStub(ch).SendMessage(rpc.SendMessageRequest(messages=[message(TOPIC, f"body {i}")]),
                                                             metadata=signed, timeout=RPC_TIMEOUT)
            assert reply.status.code == pb.OK, reply.status


def _readable_by_others(root: Path) -> list[str]:
    """Every path under `root` (itself included) with a group or other permission bit."""
    paths = [root, *root.rglob("*")]
    return [f"{p} {stat.filemode(p.lstat().st_mode)}" for p in paths if p.lstat().st_mode & 0o077]


def test_a_new_data_directory_and_its_files_are_private_and_a_planted_link_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    data = tmp_path / "data"
    b = BrokerProcess(data, *AUTH_ARGS)
    # The server's pid is the shell's (exec): plant a link where the ready file's temporary used to be.
    planted = b.ready_file.parent / ".ready.$$.tmp"
    b.launcher = ("sh", "-c", f'ln -s "{victim}" "{planted}" && exec "$@"', "sh")
    b.start()
    try:
        _send_a_few(b)
    finally:
        b.stop()
    assert victim.read_text() == "precious\n"
    assert not b.ready_file.is_symlink() and b.ready_file.read_text() == f"127.0.0.1:{b.port}\n"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert (data / "users.json").exists()
    assert _readable_by_others(data) == []


def test_an_existing_looser_data_directory_is_made_private_saying_so(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o755)  # as an older broker left it
    b = BrokerProcess(data).start()
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        said = [line for line in b.log if str(data) in line and "made it 700" in line]
        assert len(said) == 1, list(b.log)
    finally:
        b.stop()


def test_the_workers_supervisor_and_its_shards_keep_their_files_private(tmp_path):
    data = tmp_path / "data"
    b = BrokerProcess(data, "--workers", "2").start()
    b.stop()
    assert sorted(p.name for p in data.iterdir() if p.is_dir()) == ["shard-0", "shard-1"]
    assert _readable_by_others(data) == []
