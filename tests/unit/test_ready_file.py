"""The ready file of `rockmq serve`/`namesrv`: HOST:PORT, written whole (never seen half-written)."""

import os
import stat

from rockmq.plumbing.ready_file import write_ready_file


def test_ready_file_holds_host_and_port_and_nothing_else_is_left(tmp_path):
    target = tmp_path / "ready"
    write_ready_file(target, "127.0.0.1", 40123)
    write_ready_file(target, "127.0.0.1", 40124)  # a restart replaces it
    assert target.read_text() == "127.0.0.1:40124\n"
    assert [p.name for p in tmp_path.iterdir()] == ["ready"]


def test_a_link_planted_where_the_temporary_file_was_is_not_followed(tmp_path):
    """The temporary name used to be known in advance (issue 32 §12): a symlink there was written through."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / f".ready.{os.getpid()}.tmp").symlink_to(victim)
    write_ready_file(tmp_path / "ready", "127.0.0.1", 40123)
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "ready").read_text() == "127.0.0.1:40123\n"
    assert stat.S_IMODE((tmp_path / "ready").stat().st_mode) == 0o600
