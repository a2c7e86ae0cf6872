"""HOST:PORT strings <-> the protocol's Endpoints. Pure functions, no I/O."""

from __future__ import annotations

import ipaddress

from rockmq.protocol import pb


def endpoints_of(address: str) -> pb.Endpoints:
    """'host:port' (IPv4, [IPv6] or a name) as the protocol's Endpoints."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        scheme = pb.IPv6 if ipaddress.ip_address(host).version == 6 else pb.IPv4
    except ValueError:
        scheme = pb.DOMAIN_NAME
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=int(port))])


def address_of(endpoints: pb.Endpoints) -> str:
    """The first address of Endpoints as 'host:port' (what a gRPC channel dials)."""
    first = endpoints.addresses[0]
    return f"[{first.host}]:{first.port}" if endpoints.scheme == pb.IPv6 else f"{first.host}:{first.port}"
