"""The receive relay under `rockmq serve --workers 2` (broker/cluster/lite_relay.py), over raw gRPC as
the official LiteSimpleConsumer speaks: it receives on one shard only, yet gets its lite topics of
both, a message arriving at the other shard within a look; the other shard's come with wrapped
receipt handles, which that shard settles; a forged wrapping is refused as any bad handle; an owner
that does not answer gives a retriable status. Under --auth the relay acts with the cluster's inner
credentials, and a client's own forwarded or watch header is not honoured."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

from dead_letters import dead_letters
from lite_wire import Lite, lite_message, meta
from mqwire import RPC_TIMEOUT, Conn
from shard_set import ShardSet
from waiting import wait_for

from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import acl, acl_grpc, admin, admin_grpc, pb, rpc, svc, users, users_grpc
from rockmq.protocol.conventions import FORWARDED_HEADER, LITE_WATCH_HEADER, lite_owner

PARENT, GROUP, CLIENT = "relayed", "relayed-g", "simple-1"


def _heartbeat(endpoint: str, lite: Lite) -> None:
    """What the official client tells every broker of its route: it is a LiteSimpleConsumer of the group."""
    c = Conn(endpoint)
    try:
        reply = c.mq.Heartbeat(rpc.HeartbeatRequest(client_type=pb.LITE_SIMPLE_CONSUMER, group=pb.Resource(name=GROUP)),
                               metadata=lite.meta, timeout=RPC_TIMEOUT)
        assert reply.status.code == pb.OK, reply
    finally:
        c.close()


def _shard_pid(shards, broker: str) -> int:
    for pid in shards.shard_pids():
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if broker.encode() in args:  # --broker-name
            return pid
    raise AssertionError(f"no shard process is broker {broker}")


def test_a_lite_simple_consumer_gets_both_shards_lite_topics_on_one(two_shards):
    conn = Conn(two_shards.endpoint)  # shard 0: where the consumer receives, acks and changes invisible time
    try:
        conn.admin.CreateTopic(admin.CreateTopicRequest(name=PARENT, queue_count=2, message_types=["LITE"]),
                               timeout=RPC_TIMEOUT)
        owners = two_shards.shards(PARENT)
        here = next(b for b, e in owners.items() if e == two_shards.endpoint)
        there = next(b for b in owners if b != here)
        names = {lite_owner(n, list(owners)): n for n in (f"job-{i}" for i in range(8))}
        assert set(names) == set(owners), "a lite topic on each shard"
        lite = Lite(conn, GROUP, PARENT, CLIENT)
        for endpoint in owners.values():
            _heartbeat(endpoint, lite)
        assert lite.sync(pb.COMPLETE_ADD, *names.values()).status.code == pb.OK
        conn.send_ok(*(lite_message(PARENT, n, f"{n}:0") for n in names.values()))

        started = time.monotonic()
        got = lite.receive(poll_s=3)
        got += lite.receive(poll_s=3) if len(got) < 2 else []
        assert sorted(m.body.decode() for m in got) == sorted(f"{n}:0" for n in names.values()), got
        assert time.monotonic() - started < 2
        remote = next(m for m in got if m.system_properties.lite_topic == names[there])
        local = next(m for m in got if m.system_properties.lite_topic == names[here])
        assert remote.system_properties.receipt_handle.startswith(f"~{there}~")
        assert not local.system_properties.receipt_handle.startswith("~")

        # A forged or unknown wrapping: the INVALID_RECEIPT_HANDLE of any bad handle.
        for forged in (f"~nobody~{remote.system_properties.receipt_handle[len(there) + 2:]}", f"~{here}~abc",
                       f"~{there}~abc", "~~", "~"):
            reply = conn.ack(GROUP, PARENT, forged)
            assert reply.entries[0].status.code == pb.INVALID_RECEIPT_HANDLE, (forged, reply)
            changed = conn.change_invisible(GROUP, PARENT, forged, ms=1000)
            assert changed.status.code == pb.INVALID_RECEIPT_HANDLE, (forged, changed)

        # 30 s -> 0.5 s at the owner, through shard 0: back (attempt 2) with the next receive, a new wrapped handle.
        moved = conn.change_invisible(GROUP, PARENT, remote.system_properties.receipt_handle, ms=500)
        assert moved.status.code == pb.OK, moved
        assert moved.receipt_handle.startswith(f"~{there}~") and moved.receipt_handle != remote.system_properties.receipt_handle
        lite.ack(local)
        again = lite.receive(poll_s=3)
        assert [(m.body.decode(), m.system_properties.delivery_attempt) for m in again] == [(f"{names[there]}:0", 2)]
        lite.ack(*again)  # at shard 0: settled where it lives
        assert lite.receive() == []

        # The owner answers nothing: the ack through shard 0 is refused as retriable, and works once it is back.
        # A receive waiting at shard 0 gets a message arriving at the other at once (the owner ends its watch).
        def arrival(name: str, body: str) -> tuple[list[pb.Message], float]:
            with ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(lite.receive, 5.0)
                time.sleep(0.3)
                sent = time.monotonic()
                conn.send_ok(lite_message(PARENT, name, body))
                return waiting.result(), time.monotonic() - sent

        got, local_s = arrival(names[here], f"{names[here]}:1")
        lite.ack(*got)
        last, latency = arrival(names[there], f"{names[there]}:1")
        assert [m.body.decode() for m in last] == [f"{names[there]}:1"], last
        assert latency < 0.3, f"{latency:.2f} s"
        print(f"arrival to receive: local {local_s * 1000:.0f} ms, relayed {latency * 1000:.0f} ms")
        pid = _shard_pid(two_shards, there)
        os.kill(pid, signal.SIGSTOP)
        try:
            reply = conn.ack(GROUP, PARENT, last[0])
        finally:
            os.kill(pid, signal.SIGCONT)
        assert reply.entries[0].status.code == pb.PROXY_TIMEOUT, reply
        # Paused past its registrations, it left the routes for a while: back in them, the ack goes through.
        wait_for(lambda: there in two_shards.shards(PARENT), 10, 0.1, what=f"{there} back in the routes")
        reply = conn.ack(GROUP, PARENT, last[0])
        assert reply.status.code == pb.OK, reply

        # Given up on through shard 0: it lands in the group's dead-letter topic at its owner.
        conn.send_ok(lite_message(PARENT, names[there], f"{names[there]}:2"))
        (dead,) = lite.receive(poll_s=3)
        for handle, code in ((f"~nobody~{dead.system_properties.receipt_handle}", pb.INVALID_RECEIPT_HANDLE),
                             (dead.system_properties.receipt_handle, pb.OK)):
            forwarded = conn.mq.ForwardMessageToDeadLetterQueue(rpc.ForwardMessageToDeadLetterQueueRequest(
                group=pb.Resource(name=GROUP), topic=pb.Resource(name=PARENT), receipt_handle=handle,
                message_id=dead.system_properties.message_id, lite_topic=names[there]), metadata=lite.meta,
                timeout=RPC_TIMEOUT)
            assert forwarded.status.code == code, forwarded
        assert dead.system_properties.message_id in {d.message_id for d in dead_letters(conn, GROUP)}
    finally:
        conn.close()



class Signed:
    """A raw lite consumer (client id CLIENT) of GROUP whose every call is signed as `user`."""

    def __init__(self, endpoint: str, user: str, secret: str) -> None:
        self.channel = open_channel(endpoint)
        self.mq = svc.MessagingServiceStub(self.channel)
        self.creds, self.meta = Credentials(user, secret), tuple(meta(CLIENT))

    def md(self, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        return (*self.meta, *extra, *self.creds.headers())

    def receive(self, poll_s: float, *extra: tuple[str, str]) -> list[pb.Message]:
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name=GROUP), batch_size=32,
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=PARENT), id=0),
                                        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        req.invisible_duration.FromMilliseconds(30_000)
        req.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        frames = list(self.mq.ReceiveMessage(req, metadata=self.md(*extra), timeout=poll_s + RPC_TIMEOUT))
        assert frames[0].status.code in (pb.OK, pb.MESSAGE_NOT_FOUND), frames[0]
        return [f.message for f in frames if f.WhichOneof("content") == "message"]


def test_under_auth_the_relay_acts_for_a_user_granted_only_the_parent_and_group(tmp_path):
    """`--workers 2 --auth`: the relay's calls to the other shard go under the cluster's inner
    credentials, so a user granted Sub on the parent and the group only gets both shards' lite topics;
    the forwarded and watch headers from a client are not honoured (its receive is an ordinary one)."""
    admin_, secret = "admin", "relay-admin-secret"
    shards = ShardSet(tmp_path / "data", 2, "--auth", "--admin-user", admin_, "--admin-secret", secret).start()
    admin_client = bob = None
    try:
        admin_client, bob = Signed(shards.endpoint, admin_, secret), Signed(shards.endpoint, "bob", "bob-secret")
        admins, acls = admin_grpc.AdminStub(admin_client.channel), acl_grpc.AclsStub(admin_client.channel)
        admins.CreateTopic(admin.CreateTopicRequest(name=PARENT, queue_count=2, message_types=["LITE"]),
                           metadata=admin_client.md(), timeout=RPC_TIMEOUT)
        admins.CreateGroup(admin.CreateGroupRequest(name=GROUP), metadata=admin_client.md(), timeout=RPC_TIMEOUT)
        users_grpc.UsersStub(admin_client.channel).CreateUser(users.CreateUserRequest(name="bob", secret="bob-secret"),
                                                              metadata=admin_client.md(), timeout=RPC_TIMEOUT)
        for resource in (f"Topic:{PARENT}", f"Group:{GROUP}"):
            acls.GrantAcl(acl.AclEntry(user="bob", resource=resource, actions=["Sub"], decision="Allow"),
                          metadata=admin_client.md(), timeout=RPC_TIMEOUT)
        route = admin_client.mq.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name=PARENT)),
                                           metadata=admin_client.md(), timeout=RPC_TIMEOUT)
        owners = {q.broker.name: f"{q.broker.endpoints.addresses[0].host}:{q.broker.endpoints.addresses[0].port}"
                  for q in route.message_queues}
        here = next(b for b, e in owners.items() if e == shards.endpoint)
        names = {lite_owner(n, list(owners)): n for n in (f"job-{i}" for i in range(8))}
        assert set(names) == set(owners) and len(owners) == 2
        for endpoint in owners.values():
            with open_channel(endpoint) as ch:
                reply = svc.MessagingServiceStub(ch).Heartbeat(
                    rpc.HeartbeatRequest(client_type=pb.LITE_SIMPLE_CONSUMER, group=pb.Resource(name=GROUP)),
                    metadata=bob.md(), timeout=RPC_TIMEOUT)
                assert reply.status.code == pb.OK, reply
        synced = bob.mq.SyncLiteSubscription(rpc.SyncLiteSubscriptionRequest(
            action=pb.COMPLETE_ADD, topic=pb.Resource(name=PARENT), group=pb.Resource(name=GROUP),
            lite_topic_set=list(names.values())), metadata=bob.md(), timeout=RPC_TIMEOUT)
        assert synced.status.code == pb.OK, synced

        def send(name: str, body: str) -> None:
            sent = admin_client.mq.SendMessage(rpc.SendMessageRequest(messages=[lite_message(PARENT, name, body)]),
                                               metadata=admin_client.md(), timeout=RPC_TIMEOUT)
            assert sent.status.code == pb.OK, sent

        for name in names.values():
            send(name, f"{name}:0")
        got = bob.receive(3)
        got += bob.receive(3) if len(got) < 2 else []
        assert sorted(m.body.decode() for m in got) == sorted(f"{n}:0" for n in names.values()), got
        acked = bob.mq.AckMessage(rpc.AckMessageRequest(
            group=pb.Resource(name=GROUP), topic=pb.Resource(name=PARENT),
            entries=[rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                         receipt_handle=m.system_properties.receipt_handle,
                                         lite_topic=m.system_properties.lite_topic) for m in got]),
            metadata=bob.md(), timeout=RPC_TIMEOUT)
        assert acked.status.code == pb.OK, acked

        send(names[here], f"{names[here]}:1")  # a client's "watch only" is an ordinary receive: it takes it
        got = bob.receive(2, (FORWARDED_HEADER, "1"), (LITE_WATCH_HEADER, "1"))
        assert [m.body.decode() for m in got] == [f"{names[here]}:1"], got
    finally:
        for c in (admin_client, bob):
            if c is not None:
                c.channel.close()
        shards.kill()
