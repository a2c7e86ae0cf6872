"""Small raw-gRPC helpers for the integration tests: build messages, send, receive, ack, pull.

Every call carries a deadline, so no test can hang on a broker that stopped answering.
"""

from __future__ import annotations

import hashlib
import socket
import time

import grpc

from rockmq.auth.inner_signature import NONCE_HEADER, authorization, new_nonce
from rockmq.plumbing.channels import CHANNEL_OPTIONS, ChannelOptions, Tls, client_metadata, open_channel
from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_HEADER, date_now
from rockmq.protocol import admin, admin_grpc, batch_grpc, pb, rpc, svc
from rockmq.protocol import batch as batch_pb
from rockmq.protocol.message_id import new_message_id

CLIENT_ID = "rockmq-tests@" + socket.gethostname()
META = client_metadata(CLIENT_ID)
RPC_TIMEOUT = 10.0


class Conn:
    """One channel to a broker: the messaging stub plus the admin stub."""

    def __init__(self, endpoint: str, tls: Tls | None = None, options: ChannelOptions = ()) -> None:
        """`options`: gRPC channel options beside rockmq's (a plaintext channel)."""
        self.channel = grpc.insecure_channel(endpoint, options=(*CHANNEL_OPTIONS, *options)) if options else \
            open_channel(endpoint, tls)
        self.mq = svc.MessagingServiceStub(self.channel)
        self.admin = admin_grpc.AdminStub(self.channel)
        self.batch = batch_grpc.BatchMessagingStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    # --- admin -----------------------------------------------------------------------------

    def create_topic(self, name: str, queues: int = 1, types: tuple[str, ...] = ()) -> admin.TopicInfo:
        return self.admin.CreateTopic(admin.CreateTopicRequest(name=name, queue_count=queues, message_types=list(types)),
                                      timeout=RPC_TIMEOUT)

    def create_group(self, name: str, fifo: bool = False, max_attempts: int = 0) -> admin.GroupInfo:
        return self.admin.CreateGroup(admin.CreateGroupRequest(name=name, fifo=fifo, max_attempts=max_attempts),
                                      timeout=RPC_TIMEOUT)

    def describe_topic(self, name: str, local: bool = False) -> admin.TopicInfo:
        """The topic on every broker of a cluster, or with `local` on this broker only."""
        return self.admin.DescribeTopic(admin.TopicRequest(name=name, local=local), timeout=RPC_TIMEOUT)

    def describe_group(self, name: str) -> admin.GroupInfo:
        return self.admin.DescribeGroup(admin.GroupRequest(name=name), timeout=RPC_TIMEOUT)

    def topic_names(self, limit: int = 0) -> list[str]:
        """Every topic's name, read page by page (`limit`: per page; 0, the broker's max_list_page)."""
        return self._every_page(lambda token: self.admin.ListTopics(
            admin.ListTopicsRequest(limit=limit, page_token=token), timeout=RPC_TIMEOUT), "topics")

    def group_names(self, limit: int = 0) -> list[str]:
        return self._every_page(lambda token: self.admin.ListGroups(
            admin.ListGroupsRequest(limit=limit, page_token=token), timeout=RPC_TIMEOUT), "groups")

    @staticmethod
    def _every_page(call, field: str) -> list[str]:
        names: list[str] = []
        token = ""
        while True:
            reply = call(token)
            names += [entry.name for entry in getattr(reply, field)]
            token = reply.next_page_token
            if not token:
                return names

    # --- messaging -------------------------------------------------------------------------

    def stage(self, *messages: pb.Message, deduplicate: bool = False) -> batch_pb.StageResponse:
        """Stage (the Spark sink's first step) a chunk of these messages."""
        parts = [staged_parts(m) for m in messages]
        return self.batch.Stage(batch_pb.StageRequest(system_properties=[sp for sp, _ in parts], contents=[c for _, c in parts],
                                                      deduplicate=deduplicate), timeout=RPC_TIMEOUT)

    def send(self, *messages: pb.Message) -> rpc.SendMessageResponse:
        return self.mq.SendMessage(rpc.SendMessageRequest(messages=list(messages)), metadata=META, timeout=RPC_TIMEOUT)

    def send_ok(self, *messages: pb.Message) -> list[rpc.SendResultEntry]:
        reply = self.send(*messages)
        assert reply.status.code == pb.OK, reply
        assert len(reply.entries) == len(messages), reply
        assert all(e.status.code == pb.OK for e in reply.entries), reply
        return list(reply.entries)

    def receive_frames(self, group: str, topic: str, *, batch: int = 32, invisible_ms: int | None = 30_000,
                       poll_s: float = 0.0, tag: str = "*", sql: str | None = None, timeout: float | None = None,
                       auto_renew: bool = False) -> list[rpc.ReceiveMessageResponse]:
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group),
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                        filter_expression=filter_expression(tag, sql),
                                        batch_size=batch, auto_renew=auto_renew)
        if invisible_ms is not None:
            req.invisible_duration.FromMilliseconds(invisible_ms)
        req.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        return list(self.mq.ReceiveMessage(req, metadata=META, timeout=timeout or poll_s + RPC_TIMEOUT))

    def receive(self, group: str, topic: str, **kw) -> tuple[int, list[pb.Message]]:
        """-> (status code, messages); checks the stream shape: status, messages, delivery_timestamp."""
        frames = self.receive_frames(group, topic, **kw)
        kinds = [f.WhichOneof("content") for f in frames]
        assert kinds and kinds[0] == "status", kinds
        assert kinds[-1] == "delivery_timestamp", kinds
        assert all(k == "message" for k in kinds[1:-1]), kinds
        return frames[0].status.code, [f.message for f in frames[1:-1]]

    def receive_n(self, group: str, topic: str, n: int, *, within: float = 10.0, **kw) -> list[pb.Message]:
        """Receive until n messages came (or `within` seconds passed); returns what came."""
        got: list[pb.Message] = []
        until = time.monotonic() + within
        while len(got) < n:
            left = until - time.monotonic()
            if left <= 0:
                break
            code, msgs = self.receive(group, topic, batch=n - len(got), poll_s=min(left, 2.0), **kw)
            assert code in (pb.OK, pb.MESSAGE_NOT_FOUND), pb.Code.Name(code)
            got.extend(msgs)
        return got

    def ack(self, group: str, topic: str, *messages_or_handles) -> rpc.AckMessageResponse:
        entries = []
        for m in messages_or_handles:
            if isinstance(m, str):
                entries.append(rpc.AckMessageEntry(message_id="", receipt_handle=m))
            else:
                entries.append(rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                                   receipt_handle=m.system_properties.receipt_handle))
        return self.mq.AckMessage(rpc.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic),
                                                        entries=entries), metadata=META, timeout=RPC_TIMEOUT)

    def change_invisible(self, group: str, topic: str, handle: str, *, ms: int | None = None, seconds: int | None = None,
                         message_id: str = "") -> rpc.ChangeInvisibleDurationResponse:
        req = rpc.ChangeInvisibleDurationRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic),
                                                 receipt_handle=handle, message_id=message_id)
        if seconds is not None:
            req.invisible_duration.seconds = seconds  # may be negative
        else:
            req.invisible_duration.FromMilliseconds(ms)
        return self.mq.ChangeInvisibleDuration(req, metadata=META, timeout=RPC_TIMEOUT)

    def pull(self, group: str, topic: str, queue_id: int, offset: int, *, batch: int = 32, poll_s: float = 0.0,
             tag: str = "*", sql: str | None = None, timeout: float | None = None) -> tuple[int, list[pb.Message], int | None]:
        """-> (status code, messages, next_offset or None); checks the stream shape."""
        req = rpc.PullMessageRequest(group=pb.Resource(name=group),
                                     message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id),
                                     offset=offset, batch_size=batch, filter_expression=filter_expression(tag, sql))
        req.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        frames = list(self.mq.PullMessage(req, metadata=META, timeout=timeout or poll_s + RPC_TIMEOUT))
        kinds = [f.WhichOneof("content") for f in frames]
        assert kinds and kinds[0] == "status", kinds
        code = frames[0].status.code
        if code not in (pb.OK, pb.MESSAGE_NOT_FOUND):
            assert len(frames) == 1, kinds
            return code, [], None
        assert kinds[-1] == "next_offset", kinds
        assert all(k == "message" for k in kinds[1:-1]), kinds
        return code, [f.message for f in frames[1:-1]], frames[-1].next_offset

    def pull_all(self, topic: str, queue_id: int, group: str = "pull-all-reader") -> list[pb.Message]:
        """Every message of a queue, from its min offset to its end."""
        end = self.query_offset(topic, queue_id, pb.END).offset
        offset = self.query_offset(topic, queue_id, pb.BEGINNING).offset
        out: list[pb.Message] = []
        while offset < end:
            code, msgs, nxt = self.pull(group, topic, queue_id, offset, batch=1024)
            assert code == pb.OK, pb.Code.Name(code)
            assert nxt is not None and nxt > offset, (offset, nxt)
            out.extend(msgs)
            offset = nxt
        return out

    def query_offset(self, topic: str, queue_id: int, policy: int, ts_ms: int | None = None) -> rpc.QueryOffsetResponse:
        req = rpc.QueryOffsetRequest(message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id),
                                     query_offset_policy=policy)
        if ts_ms is not None:
            req.timestamp.FromMilliseconds(ts_ms)
        return self.mq.QueryOffset(req, metadata=META, timeout=RPC_TIMEOUT)

    def get_offset(self, group: str, topic: str, queue_id: int) -> rpc.GetOffsetResponse:
        req = rpc.GetOffsetRequest(group=pb.Resource(name=group),
                                   message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id))
        return self.mq.GetOffset(req, metadata=META, timeout=RPC_TIMEOUT)

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> rpc.UpdateOffsetResponse:
        req = rpc.UpdateOffsetRequest(group=pb.Resource(name=group),
                                      message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id),
                                      offset=offset)
        return self.mq.UpdateOffset(req, metadata=META, timeout=RPC_TIMEOUT)

    def query_route(self, topic: str) -> rpc.QueryRouteResponse:
        return self.mq.QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name=topic)), metadata=META, timeout=RPC_TIMEOUT)


def held_ids(endpoint: str, topic: str, queues: int) -> set[str]:
    """The ids of every message a broker holds in the topic's first `queues` queues (none while it
    does not answer: it restarts, or is gone)."""
    conn = Conn(endpoint)
    try:
        return {m.system_properties.message_id for q in range(queues) for m in conn.pull_all(topic, q)}
    except grpc.RpcError:
        return set()
    finally:
        conn.close()


def filter_expression(tag: str = "*", sql: str | None = None) -> pb.FilterExpression:
    if sql is not None:
        return pb.FilterExpression(type=pb.SQL, expression=sql)
    return pb.FilterExpression(type=pb.TAG, expression=tag)


def message(topic: str, body: bytes | str, *, tag: str | None = None, keys: tuple[str, ...] = (),
            message_id: str | None = None, group: str | None = None, properties: dict[str, str] | None = None) -> pb.Message:
    if isinstance(body, str):
        body = body.encode()
    msg = pb.Message(topic=pb.Resource(name=topic), body=body, user_properties=properties or {})
    sp = msg.system_properties
    sp.message_id = new_message_id() if message_id is None else message_id
    sp.keys.extend(keys)
    sp.born_host = socket.gethostname()
    sp.born_timestamp.GetCurrentTime()
    sp.message_type = pb.FIFO if group else pb.NORMAL
    if tag is not None:
        sp.tag = tag
    if group:
        sp.message_group = group
    return msg


def staged_parts(msg: pb.Message) -> tuple[bytes, bytes]:
    """A message in the two parts Stage (the Spark sink's) takes: its system properties (with the
    body digest), the rest. Consumes `msg`."""
    sp = msg.system_properties
    sp.body_digest.type = pb.SHA1
    sp.body_digest.checksum = hashlib.sha1(msg.body).hexdigest().upper()
    sp_bytes = sp.SerializeToString()
    msg.ClearField("system_properties")
    return sp_bytes, msg.SerializeToString()


def code_name(code: int) -> str:
    return pb.Code.Name(code)


def inner_signed(method: str, access_key: str, secret: str, *, nonce: str = "") -> tuple[tuple[str, str], ...]:
    """The headers of one control-plane call to `method` (/package.Service/Method) as a broker signs
    it with the cluster's inner credentials (auth/inner_signature.py): good for that one call."""
    date, nonce = date_now(), nonce or new_nonce()
    return (*META, (DATE_HEADER, date), (NONCE_HEADER, nonce),
            (AUTHORIZATION_HEADER, authorization(access_key, secret, date, method, nonce)))
