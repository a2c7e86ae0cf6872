"""Raw-gRPC lite consumers and messages for the tests (issue 29): a lite consumer is a client id with its
own subscriptions, speaking as the official clients do."""

from __future__ import annotations

from mqwire import RPC_TIMEOUT, message

from rockmq.plumbing.channels import CLIENT_ID_HEADER, LANGUAGE_HEADER, VERSION_HEADER
from rockmq.protocol import pb, rpc


def lite_message(topic: str, lite: str, body: str) -> pb.Message:
    msg = message(topic, body)
    msg.system_properties.message_type = pb.LITE
    msg.system_properties.lite_topic = lite
    return msg


def meta(client: str, language: str = "JAVA") -> list[tuple[str, str]]:
    """An official client's headers (rockmq's own say PYTHON and rockmq)."""
    return [(CLIENT_ID_HEADER, client), (LANGUAGE_HEADER, language), (VERSION_HEADER, "5.1.2")]


class Lite:
    """A lite consumer of one group and parent, as a client id (its own subscriptions)."""

    def __init__(self, conn, group: str, topic: str, client: str, language: str = "JAVA") -> None:
        self.conn, self.group, self.topic, self.meta = conn, group, topic, meta(client, language)

    def sync(self, action: int, *names: str) -> rpc.SyncLiteSubscriptionResponse:
        return self.conn.mq.SyncLiteSubscription(rpc.SyncLiteSubscriptionRequest(
            action=action, topic=pb.Resource(name=self.topic), group=pb.Resource(name=self.group),
            lite_topic_set=list(names)), metadata=self.meta, timeout=RPC_TIMEOUT)

    def receive(self, poll_s: float = 0.0, batch: int = 32, invisible_ms: int = 30_000) -> list[pb.Message]:
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name=self.group), batch_size=batch,
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=self.topic), id=0),
                                        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        req.invisible_duration.FromMilliseconds(invisible_ms)
        req.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        frames = list(self.conn.mq.ReceiveMessage(req, metadata=self.meta, timeout=poll_s + RPC_TIMEOUT))
        assert frames[0].status.code in (pb.OK, pb.MESSAGE_NOT_FOUND), frames[0]
        return [f.message for f in frames if f.WhichOneof("content") == "message"]

    def ack(self, *messages: pb.Message) -> None:
        reply = self.conn.mq.AckMessage(rpc.AckMessageRequest(
            group=pb.Resource(name=self.group), topic=pb.Resource(name=self.topic),
            entries=[rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                         receipt_handle=m.system_properties.receipt_handle,
                                         lite_topic=m.system_properties.lite_topic) for m in messages]),
            metadata=self.meta, timeout=RPC_TIMEOUT)
        assert reply.status.code == pb.OK, reply


def bodies(messages: list[pb.Message]) -> list[tuple[str, str]]:
    return [(m.system_properties.lite_topic, m.body.decode()) for m in messages]
