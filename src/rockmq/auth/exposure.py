"""The one warning of a server anyone on the network can use: listening beyond loopback without
authentication (docs/security.md)."""

from __future__ import annotations

import ipaddress
import logging

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or name to listen on) reaches this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def warn_if_open(server: str, host: str, secured: bool, turn_on: str) -> None:
    """Log once at start when `server` listens on a non-loopback `host` without authentication
    (`turn_on`: the flags that would turn it on)."""
    if not secured and not is_loopback(host):
        log.warning("this %s listens on %s without authentication: anyone who can reach it can use it "
                    "(turn it on with %s, docs/security.md)", server, host, turn_on)
