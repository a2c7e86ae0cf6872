"""The `rockmq` CLI against a real broker: topics, groups, send/tail, and how it fails."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from broker_process import NameServerProcess
from mqwire import message

from rockmq.config import Settings
from rockmq.protocol import pb


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def table(stdout: str, header_first: str) -> list[list[str]]:
    """The rows under the header line that starts with `header_first`, split on whitespace."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [header_first])
    return [ln.split() for ln in lines[start + 1:] if ln.strip()]


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, *fragments: str) -> str:
    err_lines = result.stderr.splitlines()
    assert result.returncode == code, f"exit {result.returncode}, want {code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert len(err_lines) == 1, f"want exactly one line on stderr, got {len(err_lines)}:\n{result.stderr}"
    assert result.stdout == "", result.stdout
    for f in fragments:
        assert f.lower() in err_lines[0].lower(), err_lines[0]
    return err_lines[0]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- topics ------------------------------------------------------------------------------------


def test_topic_create_list_describe_delete(broker, conn, unique):
    topic = unique("cli-topic")
    out = ok(broker.cli("topic", "create", topic, "--queues", "4", "--types", "NORMAL,FIFO"))
    assert topic in out and "4 queues" in out and "NORMAL" in out and "FIFO" in out
    info = conn.describe_topic(topic)
    assert info.queue_count == 4 and list(info.message_types) == ["NORMAL", "FIFO"]

    rows = {r[0]: r for r in table(ok(broker.cli("topic", "list")), "TOPIC")}
    assert rows[topic][1:] == ["4", "NORMAL,FIFO"]

    # Empty topic: every queue [0, 0).
    out = ok(broker.cli("topic", "describe", topic))
    assert out.splitlines()[0].startswith(f"topic {topic}: 4 queues")
    assert table(out, "BROKER") == [["broker-a", str(q), "0", "0", "0"] for q in range(4)]

    # 6 messages: describe's offsets show where each went.
    entries = conn.send_ok(*[message(topic, f"m{i}") for i in range(6)])
    per_queue = [0] * 4
    for m in conn.receive_n(unique("cli-peek"), topic, 6, within=5):  # learn each message's queue
        per_queue[m.system_properties.queue_id] += 1
    assert sum(per_queue) == 6 and len(entries) == 6
    rows = table(ok(broker.cli("topic", "describe", topic)), "BROKER")
    assert rows == [["broker-a", str(q), "0", str(per_queue[q]), str(per_queue[q])] for q in range(4)]

    # FIFO accepted; DELAY not (the topic's types).
    assert conn.send(message(topic, "fifo", group="g1")).status.code == pb.OK
    bad = message(topic, "delayed")
    bad.system_properties.message_type = pb.DELAY
    bad.system_properties.delivery_timestamp.GetCurrentTime()
    assert conn.send(bad).status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE

    out = ok(broker.cli("topic", "delete", topic))
    assert topic in out
    assert topic not in {r[0] for r in table(ok(broker.cli("topic", "list")), "TOPIC")}
    assert_one_line_error(broker.cli("topic", "describe", topic), 1, topic)

    # Created again under the same name: a clean slate.
    ok(broker.cli("topic", "create", topic, "--queues", "2"))
    assert table(ok(broker.cli("topic", "describe", topic)), "BROKER") == [["broker-a", "0", "0", "0", "0"],
                                                                           ["broker-a", "1", "0", "0", "0"]]
    assert conn.send_ok(message(topic, "new life"))[0].offset == 0


def test_topic_create_defaults(broker, unique):
    topic = unique("cli-default")
    out = ok(broker.cli("topic", "create", topic))
    assert "8 queues" in out  # the broker's default
    for t in ("NORMAL", "FIFO", "DELAY", "TRANSACTION"):
        assert t in out


# --- groups ------------------------------------------------------------------------------------


def test_group_create_list(broker, conn, unique):
    fifo, plain = unique("cli-fifo"), unique("cli-plain")
    out = ok(broker.cli("group", "create", fifo, "--fifo", "--max-attempts", "5"))
    assert fifo in out and "FIFO" in out and "max attempts 5" in out
    out = ok(broker.cli("group", "create", plain))
    assert plain in out and "concurrent" in out and "max attempts 3" in out  # the shared broker runs --max-attempts 3

    rows = {r[0]: r for r in table(ok(broker.cli("group", "list")), "GROUP")}
    assert rows[fifo][1:] == ["FIFO", "5", "-"]
    assert rows[plain][1:] == ["-", "3", "-"]
    g = conn.describe_group(fifo)
    assert g.fifo and g.max_attempts == 5


def test_group_describe_offsets_lag_inflight(broker, conn, unique):
    topic, group = unique("cli-gd"), unique("cli-gd-g")
    conn.create_topic(topic, queues=2)
    ok(broker.cli("group", "create", group, "--max-attempts", "5"))
    conn.send_ok(*[message(topic, f"m{i}") for i in range(5)])
    max_off = {q.queue_id: q.max_offset for q in conn.describe_topic(topic).queues}
    assert sum(max_off.values()) == 5

    got = conn.receive_n(group, topic, 3, within=5, invisible_ms=60_000)  # no ack: 3 in flight
    assert len(got) == 3
    popped = {0: 0, 1: 0}
    inflight = {0: 0, 1: 0}
    for m in got:
        q = m.system_properties.queue_id
        popped[q] = max(popped[q], m.system_properties.queue_offset + 1)
        inflight[q] += 1

    def describe() -> tuple[str, dict[int, list[str]]]:
        out = ok(broker.cli("group", "describe", group))
        return out.splitlines()[0], {int(r[2]): r[:1] + r[2:] for r in table(out, "TOPIC")}

    first, rows = describe()
    assert first.startswith(f"group {group}: concurrent, max attempts 5, consume mode pop, 3 in flight"), first
    assert sorted(rows) == [0, 1]
    for q, r in rows.items():
        # TOPIC QUEUE POP_OFFSET COMMITTED MAX_OFFSET LAG INFLIGHT LAG_TIME
        assert r[0] == topic
        assert r[2:7] == [str(popped[q]), "-", str(max_off[q]), str(max_off[q] - popped[q] + inflight[q]),
                          str(inflight[q])], (q, r)
        assert (float(r[7].removesuffix("s")) > 0) == (r[5] != "0"), r  # since the oldest unacknowledged was stored

    # Ack one: in flight and lag drop.
    acked = got[0]
    assert conn.ack(group, topic, acked).status.code == pb.OK
    aq = acked.system_properties.queue_id
    inflight[aq] -= 1
    first, rows = describe()
    assert first.endswith("2 in flight"), first
    for q, r in rows.items():
        assert r[2:7] == [str(popped[q]), "-", str(max_off[q]), str(max_off[q] - popped[q] + inflight[q]),
                          str(inflight[q])], (q, r)

    # An offset group: COMMITTED shows, and the lag counts from it.
    reader = unique("cli-gd-offsets")
    assert conn.update_offset(reader, topic, 1, 1).status.code == pb.OK
    out = ok(broker.cli("group", "describe", reader))
    assert out.splitlines()[0] == f"group {reader}: concurrent, max attempts 3, consume mode offset, 0 in flight", out
    rows = {int(r[2]): r[:1] + r[2:] for r in table(out, "TOPIC")}
    assert rows[1][2:7] == ["0", "1", str(max_off[1]), str(max_off[1] - 1), "0"], rows


# --- send and tail -----------------------------------------------------------------------------


def test_message_send_and_tail(broker, conn, unique):
    topic, group = unique("cli-msg"), unique("cli-msg-g")
    conn.create_topic(topic, queues=1)
    bodies = [f"hello-{i}-{unique('b')}" for i in range(3)]
    for i, body in enumerate(bodies):
        out = ok(broker.cli("message", "send", topic, body, "--tag", "T", "--key", f"K{i}"))
        assert out.startswith("sent ") and f"to {topic} at offset {i}" in out, out

    out = ok(broker.cli("message", "tail", topic, "--group", group, "--count", "3", "--timeout", "10"))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 3, out
    for body, line in zip(bodies, lines):
        assert line.endswith(body) and "tag=T" in line and "attempt=1" in line, line

    # Stored as sent: tag and keys (read by offset, through a group of its own); and tail acknowledged them all.
    code, msgs, _ = conn.pull(unique("cli-msg-reader"), topic, 0, 0)
    assert code == pb.OK
    assert [m.body.decode() for m in msgs] == bodies
    assert [list(m.system_properties.keys) for m in msgs] == [["K0"], ["K1"], ["K2"]]
    assert all(m.system_properties.tag == "T" for m in msgs)
    assert conn.describe_group(group).inflight == 0
    code, again = conn.receive(group, topic, poll_s=0)
    assert code == pb.MESSAGE_NOT_FOUND and not again


def test_tail_receives_and_acks_a_body_of_the_maximum_size(broker, conn, unique, tmp_path):
    """A body of `max_body_size` (4 MiB) is larger than gRPC's default 4 MiB receive limit once
    framed: tail must still receive and acknowledge it, and the broker log no failed batch."""
    topic, group = unique("cli-big"), unique("cli-big-g")
    conn.create_topic(topic, queues=1)
    body = tmp_path / "body"
    body.write_bytes(b"x" * (Settings().max_body_size - 4) + b"tail")
    log_before = len(broker.log)
    out = ok(broker.cli("message", "send", topic, "--body-file", str(body)))
    assert f"to {topic} at offset 0" in out, out

    out = ok(broker.cli("message", "tail", topic, "--group", group, "--count", "1", "--timeout", "10"))
    assert out.rstrip().endswith("xxxtail") and len(out) > Settings().max_body_size, out[:200]
    assert ok(broker.cli("group", "describe", group)).splitlines()[0].endswith(", 0 in flight")
    logged = "\n".join(list(broker.log)[log_before:])
    assert "Traceback" not in logged and "ExecuteBatchError" not in logged, logged


def test_send_body_from_stdin_and_message_group(broker, conn, unique):
    topic = unique("cli-stdin")
    conn.create_topic(topic, queues=1)
    cmd = [sys.executable, "-m", "rockmq", "message", "send", topic, "--body-file", "-", "--message-group", "g1",
           "--endpoint", broker.endpoint]
    ok(subprocess.run(cmd, input="from stdin\n", capture_output=True, text=True, timeout=30, check=False))
    [m] = conn.pull_all(topic, 0)
    assert m.body == b"from stdin\n"
    assert m.system_properties.message_group == "g1" and m.system_properties.message_type == pb.FIFO


def test_send_body_errors(broker, unique, tmp_path):
    topic = unique("cli-body")
    assert_one_line_error(broker.cli("message", "send", topic), 2, "--body-file")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--body-file", "-"), 2, "not both")
    assert_one_line_error(broker.cli("message", "send", topic, "--body-file", str(tmp_path / "nope")), 2, "nope")
    # --group names a consumer group: on send it is refused with the flag to use.
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--group", "g"), 2, "--message-group")


def test_message_tail_filters_by_tag(broker, conn, unique):
    topic, group = unique("cli-tagtail"), unique("cli-tagtail-g")
    conn.create_topic(topic, queues=1)
    conn.send_ok(message(topic, "skip-me", tag="a"), message(topic, "want-me", tag="b"))
    out = ok(broker.cli("message", "tail", topic, "--group", group, "--tag", "b", "--count", "1", "--timeout", "5"))
    assert "want-me" in out and "skip-me" not in out


# --- errors: one line on stderr, non-zero exit -------------------------------------------------


def test_describe_missing_topic(broker, unique):
    name = unique("cli-missing")
    assert_one_line_error(broker.cli("topic", "describe", name), 1, name)


def test_describe_missing_group(broker, unique):
    name = unique("cli-missing-g")
    assert_one_line_error(broker.cli("group", "describe", name), 1, name)


def test_create_existing_topic_and_group(broker, unique):
    topic, group = unique("cli-dup"), unique("cli-dup-g")
    ok(broker.cli("topic", "create", topic))
    assert_one_line_error(broker.cli("topic", "create", topic), 1, "already exists")
    ok(broker.cli("group", "create", group))
    assert_one_line_error(broker.cli("group", "create", group), 1, "already exists")


@pytest.mark.parametrize("name", ["bad name", "bad/name", "x" * 128, "ünïcode"])
def test_create_illegal_topic_name(broker, name):
    assert_one_line_error(broker.cli("topic", "create", name), 1, "illegal")


def test_create_illegal_group_name(broker):
    assert_one_line_error(broker.cli("group", "create", "no spaces allowed"), 1, "illegal")


def test_create_topic_zero_queues_is_refused(broker, conn, unique):
    topic = unique("cli-q0")
    for bad in ("0", "-1", "two"):
        assert_one_line_error(broker.cli("topic", "create", topic, "--queues", bad), 2, "--queues")
    assert topic not in conn.topic_names()


@pytest.mark.parametrize("flag", ["--count", "--timeout"])
def test_tail_negative_count_or_timeout_is_refused(broker, unique, flag):
    assert_one_line_error(broker.cli("message", "tail", unique("cli-neg"), "--group", "g", flag, "-1"), 2, flag)


def test_create_topic_bad_queue_count_and_type(broker, unique):
    assert_one_line_error(broker.cli("topic", "create", unique("cli-q"), "--queues", "5000"), 1)
    assert_one_line_error(broker.cli("topic", "create", unique("cli-t"), "--types", "NORMAL,BOGUS"), 1, "BOGUS")


def test_send_refused_by_broker(broker, unique):
    # An empty body is refused with a RocketMQ status: one line naming it.
    assert_one_line_error(broker.cli("message", "send", unique("cli-empty"), ""), 1, "MESSAGE_BODY_EMPTY")


def test_tail_missing_topic(broker, conn, unique):
    name = unique("cli-tail-missing")
    assert_one_line_error(broker.cli("message", "tail", name, "--group", "g", "--count", "1", "--timeout", "2"), 1,
                          name, "does not exist")
    assert name not in conn.topic_names()


@pytest.fixture(scope="module")
def name_server():
    ns = NameServerProcess().start()
    yield ns
    ns.stop()


@pytest.mark.parametrize("args", [("topic", "list"), ("group", "describe", "g"), ("message", "send", "t", "body"),
                                  ("message", "tail", "t", "--group", "g", "--timeout", "1")])
def test_name_server_endpoint_is_named(name_server, args):
    cmd = [sys.executable, "-m", "rockmq", *args, "--endpoint", name_server.endpoint]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert_one_line_error(result, 1, "is a name server", name_server.endpoint)


@pytest.mark.parametrize("endpoint", ["nohost", "127.0.0.1:99999", "127.0.0.1:", ":8081"])
@pytest.mark.parametrize("args", [("topic", "list"), ("message", "send", "t", "body")])
def test_malformed_endpoint(args, endpoint):
    cmd = [sys.executable, "-m", "rockmq", *args, "--endpoint", endpoint]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert_one_line_error(result, 2, "HOST:PORT", endpoint)


@pytest.mark.parametrize("args", [("topic", "list"), ("group", "list"), ("topic", "describe", "t"),
                                  ("message", "send", "t", "body"), ("message", "tail", "t", "--group", "g")])
def test_unreachable_endpoint(args):
    endpoint = f"127.0.0.1:{closed_port()}"
    cmd = [sys.executable, "-m", "rockmq", *args, "--endpoint", endpoint]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    line = assert_one_line_error(result, 3)
    assert endpoint in line, line
