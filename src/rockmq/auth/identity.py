"""Who a request is from, established once per request by the seam (seam.py) and read by the
handlers and by authorization: they never parse headers themselves."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Identity:
    user: str = ""  # the authenticated user; "" when authentication is off (anyone)
    super_user: bool = False  # super users pass every authorization check
    source_ip: str = ""  # the peer's address, without the port ("" if it is not an IP peer)
    tls: bool = False  # the request came over a TLS connection
    client_id: str = ""  # the x-mq-client-id header ("" if none)
    inner: bool = False  # signed with the cluster's inner credentials (a broker or replica of the cluster)

    @property
    def authenticated(self) -> bool:
        return bool(self.user)

    def __str__(self) -> str:
        """For refusals and the audit log: the user (or anonymous) and where from."""
        return f"{self.user or 'anonymous'} from {self.source_ip or 'unknown'}"


def source_ip(peer: str) -> str:
    """gRPC's peer string (`ipv4:1.2.3.4:5`, `ipv6:[::1]:5`, `unix:...`) -> the IP ("" if none)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    return ""
