"""What the pages ask the broker, through the admin calls (as `rockmq topic describe` does): the answering
broker aggregates its cluster, so every broker shows. Describes of many names run at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rockmq.protocol import admin, admin_grpc

TIMEOUT_S = 10.0  # each admin call; a page never waits longer than a few of them


async def _every_page(call: Callable[[str], Awaitable[Any]], field: str) -> list[Any]:
    entries: list[Any] = []
    token = ""
    while True:
        reply = await call(token)
        entries.extend(getattr(reply, field))
        token = reply.next_page_token
        if not token:
            return entries


async def topic_names(stub: admin_grpc.AdminStub) -> list[str]:
    topics = await _every_page(
        lambda token: stub.ListTopics(admin.ListTopicsRequest(page_token=token), timeout=TIMEOUT_S), "topics")
    return sorted(t.name for t in topics)


async def group_names(stub: admin_grpc.AdminStub) -> list[str]:
    groups = await _every_page(
        lambda token: stub.ListGroups(admin.ListGroupsRequest(page_token=token), timeout=TIMEOUT_S), "groups")
    return sorted(g.name for g in groups)


async def describe_topics(stub: admin_grpc.AdminStub, names: list[str]) -> list[admin.TopicInfo]:
    return list(await asyncio.gather(*(stub.DescribeTopic(admin.TopicRequest(name=n), timeout=TIMEOUT_S)
                                       for n in names)))


async def describe_groups(stub: admin_grpc.AdminStub, names: list[str]) -> list[admin.GroupInfo]:
    return list(await asyncio.gather(*(stub.DescribeGroup(admin.GroupRequest(name=n), timeout=TIMEOUT_S)
                                       for n in names)))


async def cluster(stub: admin_grpc.AdminStub) -> admin.ClusterInfo:
    reply: admin.ClusterInfo = await stub.DescribeCluster(admin.ClusterRequest(), timeout=TIMEOUT_S)
    return reply
