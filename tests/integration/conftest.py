"""Fixtures of the integration tests: a gRPC connection to the shared broker."""

from __future__ import annotations

import pytest
from mqwire import Conn


@pytest.fixture
def conn(broker):
    """A channel to the session's shared broker (messaging + admin stubs)."""
    c = Conn(broker.endpoint)
    yield c
    c.close()
