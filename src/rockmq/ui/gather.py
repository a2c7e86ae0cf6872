"""What the pages ask the broker, through the admin calls (as `rockmq topic describe` does): the answering
broker aggregates its cluster, so every broker shows. With auth, every call is signed as the user logged
in, so the broker's ACLs decide what they see. Describes of many names run at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc

TIMEOUT_S = 10.0  # each admin call; a page never waits longer than a few of them


@dataclass(frozen=True)
class Admin:
    """The admin service, asked as `user` (None: unsigned, auth off)."""

    stub: admin_grpc.AdminStub
    user: Credentials | None = None

    def _signed(self) -> tuple[tuple[str, str], ...]:
        return self.user.headers() if self.user else ()

    async def _every_page(self, call: Callable[[str], Awaitable[Any]], field: str) -> list[Any]:
        entries: list[Any] = []
        token = ""
        while True:
            reply = await call(token)
            entries.extend(getattr(reply, field))
            token = reply.next_page_token
            if not token:
                return entries

    async def topic_names(self) -> list[str]:
        topics = await self._every_page(lambda token: self.stub.ListTopics(
            admin.ListTopicsRequest(page_token=token), timeout=TIMEOUT_S, metadata=self._signed()), "topics")
        return sorted(t.name for t in topics)

    async def group_names(self) -> list[str]:
        groups = await self._every_page(lambda token: self.stub.ListGroups(
            admin.ListGroupsRequest(page_token=token), timeout=TIMEOUT_S, metadata=self._signed()), "groups")
        return sorted(g.name for g in groups)

    async def describe_topics(self, names: list[str]) -> list[admin.TopicInfo]:
        return list(await asyncio.gather(*(self.stub.DescribeTopic(
            admin.TopicRequest(name=n), timeout=TIMEOUT_S, metadata=self._signed()) for n in names)))

    async def describe_groups(self, names: list[str]) -> list[admin.GroupInfo]:
        return list(await asyncio.gather(*(self.stub.DescribeGroup(
            admin.GroupRequest(name=n), timeout=TIMEOUT_S, metadata=self._signed()) for n in names)))

    async def cluster(self) -> admin.ClusterInfo:
        reply: admin.ClusterInfo = await self.stub.DescribeCluster(admin.ClusterRequest(), timeout=TIMEOUT_S,
                                                                   metadata=self._signed())
        return reply

    async def members(self, group: str) -> tuple[admin.ListClientsResponse, dict[str, str]]:
        """The group's consumers every broker knows (ListClients: those that did not answer named), and the
        lane of each member heartbeating to the answering broker (ListMembers: client id -> lane)."""
        clients, members = await asyncio.gather(
            self.stub.ListClients(admin.ListClientsRequest(group=group), timeout=TIMEOUT_S, metadata=self._signed()),
            self.stub.ListMembers(admin.GroupRequest(name=group), timeout=TIMEOUT_S, metadata=self._signed()))
        return clients, {m.client_id: m.lane for m in members.members}
