"""Where a `--workers` server's dashboard (rockmq/ui/) sends its admin calls: to a shard serving, which
answers for every shard as a broker of a cluster does (the shards register with the supervisor's name
server). Unsigned: the dashboard signs each call as the user logged in. Stubs are kept per shard
endpoint: at most one per shard, since a restart reuses its port."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import grpc

from rockmq.config import Settings
from rockmq.plumbing.channels import open_aio_channel
from rockmq.protocol import admin_grpc, messages_grpc

S = TypeVar("S")


def serving_endpoint(known: Sequence[tuple[str, bool]]) -> str:
    """The gRPC endpoint of the first shard serving (else the first shard's): where the dashboard's calls
    go, and its test messages' client starts (it routes them as any client's)."""
    return next((e for e, serving in known if serving), known[0][0])


def shard_stub(settings: Settings, endpoints: Callable[[], Sequence[tuple[str, bool]]],
               make: Callable[[grpc.aio.Channel], S]) -> Callable[[], S]:
    """The stub (`make` of a channel) of the first shard serving (else the first shard); `endpoints` lists
    each shard's gRPC endpoint and whether it serves now."""
    stubs: dict[str, S] = {}

    def stub() -> S:
        endpoint = serving_endpoint(endpoints())
        found = stubs.get(endpoint)
        if found is None:
            found = stubs[endpoint] = make(open_aio_channel(endpoint, settings.client_tls))
        return found

    return stub


def shard_admin(settings: Settings, endpoints: Callable[[], Sequence[tuple[str, bool]]]
                ) -> Callable[[], admin_grpc.AdminStub]:
    """The admin stub of the first shard serving: the dashboard's pages but Messages."""
    return shard_stub(settings, endpoints, admin_grpc.AdminStub)


def shard_messages(settings: Settings, endpoints: Callable[[], Sequence[tuple[str, bool]]]
                   ) -> Callable[[], messages_grpc.MessagesStub]:
    """The Messages stub of the first shard serving: the dashboard's Messages pages."""
    return shard_stub(settings, endpoints, messages_grpc.MessagesStub)
