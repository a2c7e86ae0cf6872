"""Where a `--workers` server's dashboard (rockmq/ui/) sends its admin calls: to a shard serving, which
answers for every shard as a broker of a cluster does (the shards register with the supervisor's name
server). Unsigned: the dashboard signs each call as the user logged in. Stubs are kept per shard
endpoint: at most one per shard, since a restart reuses its port."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rockmq.config import Settings
from rockmq.plumbing.channels import open_aio_channel
from rockmq.protocol import admin_grpc


def shard_admin(settings: Settings, endpoints: Callable[[], Sequence[tuple[str, bool]]]
                ) -> Callable[[], admin_grpc.AdminStub]:
    """The admin stub of the first shard serving (else the first shard); `endpoints` lists each shard's
    gRPC endpoint and whether it serves now."""
    stubs: dict[str, admin_grpc.AdminStub] = {}

    def admin() -> admin_grpc.AdminStub:
        known = endpoints()
        endpoint = next((e for e, serving in known if serving), known[0][0])
        stub = stubs.get(endpoint)
        if stub is None:
            stub = stubs[endpoint] = admin_grpc.AdminStub(open_aio_channel(endpoint, settings.client_tls))
        return stub

    return admin
