"""Fixtures of the official clients' compat tests: a `rockmq serve --workers 2` beside the session's
plain broker, and `any_broker`, which runs a test against each."""

from __future__ import annotations

import pytest
from broker_process import BrokerProcess


@pytest.fixture(scope="session")
def workers_broker(tmp_path_factory: pytest.TempPathFactory):
    """`rockmq serve --workers 2`: shard processes joined as a cluster behind one port."""
    b = BrokerProcess(tmp_path_factory.mktemp("workers"), "--workers", "2").start()
    yield b
    b.stop()


@pytest.fixture(params=["serve", "workers"])
def any_broker(request: pytest.FixtureRequest):
    """The session's broker, then the --workers one."""
    return request.getfixturevalue("broker" if request.param == "serve" else "workers_broker")
