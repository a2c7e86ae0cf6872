"""Every table keyed by what clients send is bounded, with a clear answer past it (issue 20 §2.4).

A careless or hostile client makes topics, groups, filtered subscriptions, sessions and undecided
transactions without end; each table stops at its setting (small ones here, per broker) and what
would add to it is refused with TOO_MANY_REQUESTS naming the setting (Admin: RESOURCE_EXHAUSTED),
while everything already there keeps working. Listings page: ListTopics over many topics (100,000
in the full variant) comes back whole through its pages, and `rockmq topic list` reads them all.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from broker_process import BrokerProcess
from chaos_scale import scaled
from mqwire import META, RPC_TIMEOUT, Conn, code_name, message
from telemetry_stream import TelemetryStream

from rockmq.plumbing.channels import client_metadata
from rockmq.protocol import admin, pb, rpc
from rockmq.protocol import batch as batch_pb

WINDOW = 200  # admin calls in flight at once while filling a table


@pytest.fixture
def limited(tmp_path) -> Iterator[callable]:
    """Start a broker with these settings (as ROCKMQ_* variables) -> (its process, a connection)."""
    started: list[tuple[BrokerProcess, Conn]] = []

    def start(*args: str, **settings: int) -> tuple[BrokerProcess, Conn]:
        env = {f"ROCKMQ_{name.upper()}": str(value) for name, value in settings.items()}
        broker = BrokerProcess(tmp_path / f"data{len(started)}", *args, env=env).start()
        started.append((broker, Conn(broker.endpoint)))
        return started[-1]

    yield start
    for broker, conn in started:
        conn.close()
        broker.stop()
        assert not [line for line in broker.log if "Traceback" in line], "\n".join(broker.log)


def _create_topics(conn: Conn, names: list[str]) -> None:
    """Create topics of one queue, WINDOW calls in flight at a time."""
    for i in range(0, len(names), WINDOW):
        calls = [conn.admin.CreateTopic.future(admin.CreateTopicRequest(name=n, queue_count=1), timeout=60)
                 for n in names[i:i + WINDOW]]
        for call in calls:
            call.result()


def _refused(call, *args) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call(*args)
    return refused.value


def _status(frames: list[rpc.ReceiveMessageResponse]) -> pb.Status:
    assert frames[0].WhichOneof("content") == "status", frames
    return frames[0].status


def test_topics_stop_at_max_topics(limited):
    most = scaled(10, 1_000)
    broker, conn = limited(max_topics=most)
    _create_topics(conn, [f"t{i}" for i in range(most - 1)])
    conn.send_ok(message("sent-to", "made by a send"))  # the last one auto-created
    error = _refused(conn.create_topic, "one-too-many")
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_topics" in error.details(), error
    reply = conn.send(message("new-by-send", "x"), message("t0", "to an existing topic"))
    assert [code_name(e.status.code) for e in reply.entries] == ["TOO_MANY_REQUESTS", "OK"]
    assert "max_topics (" in reply.entries[0].status.message
    conn.create_group("a-group")
    conn.create_topic("%RETRY%a-group")  # a group's own topics count by max_groups, not max_topics
    assert _refused(conn.create_topic, "%DLQ%no-such-group").code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    names = set(conn.topic_names())
    assert "one-too-many" not in names and "new-by-send" not in names and len(names) == most + 1
    proc = broker.cli("topic", "create", "by-the-cli")
    assert proc.returncode != 0 and "max_topics" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    conn.admin.DeleteTopic(admin.TopicRequest(name="t0"), timeout=RPC_TIMEOUT)
    conn.create_topic("one-too-many")  # room again


def test_groups_stop_at_max_groups(limited):
    most = scaled(10, 1_000)
    _, conn = limited(max_groups=most)
    conn.create_topic("t")
    for i in range(most - 1):
        conn.create_group(f"g{i}")
    assert conn.receive("auto-created", "t")[0] == pb.MESSAGE_NOT_FOUND  # the last one, by its first receive
    error = _refused(conn.create_group, "one-too-many")
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "max_groups" in error.details(), error
    st = _status(conn.receive_frames("new-by-receive", "t"))
    assert code_name(st.code) == "TOO_MANY_REQUESTS" and "max_groups" in st.message, st
    assert conn.pull("new-by-pull", "t", 0, 0)[0] == pb.TOO_MANY_REQUESTS
    assert len(conn.group_names()) == most
    assert conn.receive("g0", "t")[0] == pb.MESSAGE_NOT_FOUND  # the groups there still consume


def test_filtered_subscriptions_stop_at_max_subscriptions_per_group(limited):
    most = 3
    _, conn = limited(max_subscriptions_per_group=most)
    for i in range(most + 1):
        conn.create_topic(f"t{i}")
    for i in range(most):
        assert conn.receive("g", f"t{i}", tag="a")[0] == pb.MESSAGE_NOT_FOUND
    st = _status(conn.receive_frames("g", f"t{most}", tag="a"))
    assert code_name(st.code) == "TOO_MANY_REQUESTS" and "max_subscriptions_per_group" in st.message, st
    assert conn.receive("g", f"t{most}")[0] == pb.MESSAGE_NOT_FOUND  # no filter: nothing registered
    assert conn.receive("g", "t0", tag="b")[0] == pb.MESSAGE_NOT_FOUND  # a changed filter replaces its own
    assert conn.receive("other", f"t{most}", tag="a")[0] == pb.MESSAGE_NOT_FOUND  # per group


def test_telemetry_settings_name_at_most_max_client_topics(limited):
    most = 5
    _, conn = limited(max_client_topics=most)
    topics = [pb.Resource(name=f"t{i}") for i in range(most + 1)]
    for count, code in ((most + 1, "TOO_MANY_REQUESTS"), (most, "OK")):
        settings = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=topics[:count]))
        stream = TelemetryStream(conn.mq, client_metadata(f"producer-{count}"), settings)
        try:
            reply = stream.next(RPC_TIMEOUT)
        finally:
            stream.close()
        assert reply is not None and code_name(reply.status.code) == code, reply
        assert code == "OK" or "max_client_topics" in reply.status.message


def _transactional(topic: str) -> pb.Message:
    msg = message(topic, "half")
    msg.system_properties.message_type = pb.TRANSACTION
    return msg


def test_undecided_transactions_stop_at_max_transaction_checks(limited):
    most = 5
    _, conn = limited(max_transaction_checks=most)
    entries = conn.send_ok(*[_transactional("txn") for _ in range(most)])
    reply = conn.send(_transactional("txn"), message("txn", "an ordinary message still goes"))
    assert [code_name(e.status.code) for e in reply.entries] == ["TOO_MANY_REQUESTS", "OK"]
    assert "max_transaction_checks" in reply.entries[0].status.message
    ended = conn.mq.EndTransaction(rpc.EndTransactionRequest(
        topic=pb.Resource(name="txn"), message_id=entries[0].message_id, transaction_id=entries[0].transaction_id,
        resolution=pb.ROLLBACK), metadata=META, timeout=RPC_TIMEOUT)
    assert ended.status.code == pb.OK
    conn.send_ok(_transactional("txn"))  # one decided: room for one more


def test_staged_chunks_stop_at_max_staged_chunks(limited):
    most = 3
    broker, conn = limited(max_staged_chunks=most)
    handles = [conn.stage(message("sink", f"chunk {i}")).handle for i in range(most)]
    reply = conn.stage(message("sink", "one chunk too many"))
    assert code_name(reply.status.code) == "TOO_MANY_REQUESTS" and "max_staged_chunks" in reply.status.message, reply
    conn.batch.DiscardStaged(batch_pb.DiscardStagedRequest(handles=[handles[0], handles[0]]), timeout=RPC_TIMEOUT)
    handles[0] = conn.stage(message("sink", "room again")).handle  # one discarded (twice: counted once)
    assert code_name(conn.stage(message("sink", "full again")).status.code) == "TOO_MANY_REQUESTS"
    broker.restart()  # counted again from the store
    conn = Conn(broker.endpoint)
    assert code_name(conn.stage(message("sink", "still full")).status.code) == "TOO_MANY_REQUESTS"
    published = conn.batch.PublishStaged(batch_pb.PublishStagedRequest(
        sink_id="s", batch_id=1, chunks=[batch_pb.StagedChunk(handle=h, count=1) for h in handles]), timeout=RPC_TIMEOUT)
    assert published.status.code == pb.OK and published.published == most, published
    assert all(conn.stage(message("sink", f"after {i}")).status.code == pb.OK for i in range(most))
    conn.close()


def test_sessions_stay_at_max_clients_the_longest_silent_going_first(limited):
    most = scaled(50, 100_000)  # the default max_clients in full
    clients = 3 * most
    _, conn = limited(max_clients=most, client_silence_s=3600)  # ListMembers lists the clients heard from since
    request = rpc.HeartbeatRequest(group=pb.Resource(name="g"), client_type=pb.SIMPLE_CONSUMER)

    def heartbeats(numbers: range) -> None:
        for i in range(numbers.start, numbers.stop, WINDOW):
            calls = [conn.mq.Heartbeat.future(request, metadata=client_metadata(f"c{n:07d}"), timeout=60)
                     for n in range(i, min(i + WINDOW, numbers.stop))]
            assert all(call.result().status.code == pb.OK for call in calls)

    started = time.monotonic()
    heartbeats(range(clients))
    spent = time.monotonic() - started
    heartbeats(range(most))  # the first ones again, heard from last: the others are the longest silent
    members = [m.client_id for m in conn.admin.ListMembers(admin.GroupRequest(name="g"), timeout=RPC_TIMEOUT).members]
    assert members == [f"c{n:07d}" for n in range(most)]
    print(f"\n{clients:,} clients heartbeating, {most:,} sessions held: {spent / clients * 1e6:.0f} us per heartbeat")


def test_list_topics_pages_through_every_topic(limited):
    page, topics = scaled(50, 1_000), scaled(500, 100_000)
    broker, conn = limited("--flush", "async", max_list_page=page, max_topics=topics)
    names = [f"topic-{i:06d}" for i in range(topics)]
    started = time.monotonic()
    _create_topics(conn, names)
    created = time.monotonic() - started
    first = conn.admin.ListTopics(admin.ListTopicsRequest(), timeout=RPC_TIMEOUT)
    assert len(first.topics) == page and first.next_page_token and first.total == topics
    small = conn.admin.ListTopics(admin.ListTopicsRequest(limit=7, page_token=first.next_page_token), timeout=RPC_TIMEOUT)
    assert [t.name for t in small.topics] == names[page:page + 7]
    started = time.monotonic()
    assert conn.topic_names() == names  # every one, once, in order
    listed = time.monotonic() - started
    proc = broker.cli("topic", "list", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()[1:]] == names
    print(f"\n{topics:,} topics created in {created:.1f} s, listed through {topics // page:,} pages in {listed:.1f} s")
