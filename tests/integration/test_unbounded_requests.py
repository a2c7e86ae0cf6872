"""Issue 32 §4 and §5: what a client sends is bounded before the broker parses, caches, stores or
logs it. The attacks as a client runs them, against a real broker on loopback:

- §4, a default broker (no auth): ReceiveMessage with a ~2 MB tag expression `a||b||…`, each one
  different. Each is refused (ILLEGAL_FILTER_EXPRESSION) without the broker's memory, log or store
  growing with it; a tag expression over the count of tags is refused too; a normal one works.
- §5, `--auth`, signed as a user with no grants: QueryRoute, ReceiveMessage and an admin call with
  2 MB names. Each is refused as an illegal name (ILLEGAL_TOPIC, ILLEGAL_CONSUMER_GROUP, gRPC
  INVALID_ARGUMENT) without the memory (the decision cache) or the log growing with it.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from acl_setup import GROUP, TOPIC, start_acl_broker
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT, Conn, filter_expression

from rockmq.auth.users import Users
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, pb, rpc

ATTACKS = 6
HUGE = 2 << 20  # characters of one attack's expression or name
# Of the broker's RSS over the attacks: the request buffers the allocator keeps for reuse level off
# at ~90 MB (measured over 40 QueryRoutes with such names); the unbounded broker kept each name.
GROWTH_MB = 150
LONGEST_LINE = 10_000  # characters of one log line
STORE_GROWTH = 2 << 20  # bytes the data directory may grow by over the attacks (meta, WAL)
MALLORY, MALLORY_SECRET = "mallory", "mallory-secret"  # a user with no grants


def rss_mb(broker: BrokerProcess) -> float:
    assert broker.proc is not None
    for line in Path(f"/proc/{broker.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def assert_bounded(broker: BrokerProcess, rss_before: float, attack: int) -> None:
    """Checked after each attack, so that a broker that keeps what it was sent fails the test
    before it takes the machine's memory."""
    grown = rss_mb(broker) - rss_before
    assert grown < GROWTH_MB, f"RSS grew by {grown:.0f} MB after {attack + 1} attacks"
    assert longest_line(broker) < LONGEST_LINE, f"a log line of {longest_line(broker)} characters"


def stored_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.rglob("*") if p.is_file())


def longest_line(broker: BrokerProcess) -> int:
    return max((len(line) for line in broker.log), default=0)


def receive_status(conn: Conn, group: str, topic: str, expression: pb.FilterExpression, metadata=META) -> int:
    req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                    filter_expression=expression, batch_size=1)
    req.invisible_duration.FromMilliseconds(30_000)
    frames = list(conn.mq.ReceiveMessage(req, metadata=metadata, timeout=RPC_TIMEOUT))
    return frames[0].status.code


def tag_expression(attack: int, length: int) -> str:
    """`t<attack>x0||t<attack>x1||…` of about `length` characters: every attack a new one."""
    tags, size = [], 0
    while size < length:
        tags.append(f"t{attack}x{len(tags)}")
        size += len(tags[-1]) + 2
    return "||".join(tags)


@pytest.fixture
def plain_broker(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    yield b
    b.stop()


def test_huge_tag_expressions_are_refused_before_anything_keeps_them(plain_broker):
    conn = Conn(plain_broker.endpoint)
    try:
        conn.create_topic("tags-bounded")
        conn.create_group("tags-bounded-g")
        assert receive_status(conn, "tags-bounded-g", "tags-bounded", filter_expression("a||b")) == pb.MESSAGE_NOT_FOUND
        rss, stored = rss_mb(plain_broker), stored_bytes(plain_broker.data_dir)
        for attack in range(ATTACKS):
            code = receive_status(conn, "tags-bounded-g", "tags-bounded", filter_expression(tag_expression(attack, HUGE)))
            assert code == pb.ILLEGAL_FILTER_EXPRESSION, pb.Code.Name(code)
            assert_bounded(plain_broker, rss, attack)
        many_tags = "||".join(f"t{i}" for i in range(300))  # within the length limit, over the tags' count
        assert len(many_tags) < 4096
        assert receive_status(conn, "tags-bounded-g", "tags-bounded", filter_expression(many_tags)) == \
            pb.ILLEGAL_FILTER_EXPRESSION
        stored_growth = stored_bytes(plain_broker.data_dir) - stored
        assert receive_status(conn, "tags-bounded-g", "tags-bounded", filter_expression("c||d")) == pb.MESSAGE_NOT_FOUND
    finally:
        conn.close()
    assert stored_growth < STORE_GROWTH, f"the data directory grew by {stored_growth} bytes"
    assert longest_line(plain_broker) < LONGEST_LINE, f"a log line of {longest_line(plain_broker)} characters"


@pytest.fixture
def acl_broker(tmp_path):
    Users(tmp_path).create(MALLORY, MALLORY_SECRET)
    b = start_acl_broker(tmp_path)
    yield b
    b.stop()


def test_huge_names_from_a_user_without_grants_are_refused_before_authorization(acl_broker):
    mallory = (*META, *Credentials(MALLORY, MALLORY_SECRET).headers())
    conn = Conn(acl_broker.endpoint)
    try:
        route = conn.mq.QueryRoute
        assert route(rpc.QueryRouteRequest(topic=pb.Resource(name=TOPIC)), metadata=mallory,
                     timeout=RPC_TIMEOUT).status.code == pb.FORBIDDEN
        rss = rss_mb(acl_broker)
        for attack in range(ATTACKS):
            name = f"{attack}" + "x" * HUGE
            code = route(rpc.QueryRouteRequest(topic=pb.Resource(name=name)), metadata=mallory,
                         timeout=RPC_TIMEOUT).status.code
            assert code == pb.ILLEGAL_TOPIC, pb.Code.Name(code)
            code = receive_status(conn, name, TOPIC, filter_expression(), metadata=mallory)
            assert code == pb.ILLEGAL_CONSUMER_GROUP, pb.Code.Name(code)
            with pytest.raises(grpc.RpcError) as refused:
                conn.admin.DescribeTopic(admin.TopicRequest(name=name),
                                        metadata=mallory, timeout=RPC_TIMEOUT)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value
            assert_bounded(acl_broker, rss, attack)
        for bad in ("x" * 128, "bad name", "bad\nname"):
            code = route(rpc.QueryRouteRequest(topic=pb.Resource(name=bad)), metadata=mallory,
                         timeout=RPC_TIMEOUT).status.code
            assert code == pb.ILLEGAL_TOPIC, (bad, pb.Code.Name(code))
        assert receive_status(conn, GROUP, "%RETRY%" + "y" * HUGE, filter_expression(), metadata=mallory) == \
            pb.ILLEGAL_CONSUMER_GROUP
    finally:
        conn.close()
    assert longest_line(acl_broker) < LONGEST_LINE, f"a log line of {longest_line(acl_broker)} characters"
