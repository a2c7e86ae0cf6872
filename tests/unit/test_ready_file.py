"""The ready file of `rockmq serve`/`namesrv`: HOST:PORT, written whole (never seen half-written)."""

from rockmq.ready_file import write_ready_file


def test_ready_file_holds_host_and_port_and_nothing_else_is_left(tmp_path):
    target = tmp_path / "ready"
    write_ready_file(target, "127.0.0.1", 40123)
    write_ready_file(target, "127.0.0.1", 40124)  # a restart replaces it
    assert target.read_text() == "127.0.0.1:40124\n"
    assert [p.name for p in tmp_path.iterdir()] == ["ready"]
