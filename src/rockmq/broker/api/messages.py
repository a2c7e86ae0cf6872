"""rockmq's Messages service: find a stored message by id, key or store time, and trace it
(broker/cluster/message_fanout.py answers, over every broker of a cluster)."""

from __future__ import annotations

from collections.abc import Awaitable

from rockmq.broker.api.replies import admin_call
from rockmq.broker.cluster.message_fanout import MessageSearch
from rockmq.protocol import messages, messages_grpc


class MessagesServicer(messages_grpc.MessagesServicer):
    def __init__(self, search: MessageSearch) -> None:
        self.search = search

    @admin_call
    def GetMessage(self, request: messages.GetMessageRequest) -> Awaitable[messages.MessagesResponse]:
        return self.search.get(request)

    @admin_call
    def FindMessages(self, request: messages.FindMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        return self.search.by_key(request)

    @admin_call
    def ListMessages(self, request: messages.ListMessagesRequest) -> Awaitable[messages.MessagesResponse]:
        return self.search.by_time(request)

    @admin_call
    def TraceMessage(self, request: messages.TraceMessageRequest) -> Awaitable[messages.TraceMessageResponse]:
        return self.search.trace(request)
