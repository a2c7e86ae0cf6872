"""A group member in a process of its own, for the tests that kill one (tests/cluster/test_coordinator_etcd.py):
`python coordinator_member.py URL GROUP MEMBER ENDPOINT LEASE_S` registers, campaigns, prints the
primary the campaign left (JSON, one line) and keeps its lease renewed until it is killed."""

from __future__ import annotations

import asyncio
import sys

from rockmq.broker.coordination.etcd import EtcdCoordinator
from rockmq.config import coordinator_endpoints


async def main(url: str, group: str, member: str, endpoint: str, lease_s: str) -> None:
    coordinator = EtcdCoordinator(coordinator_endpoints(url), group, member, int(lease_s))
    await coordinator.register(endpoint)
    primary = await coordinator.campaign(endpoint)
    print(primary.encode().decode() if primary else "null", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
