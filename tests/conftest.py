"""Shared fixtures: real brokers on ephemeral loopback ports, as processes or in this process."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check what is true, not how fast: a per-example deadline only fails them when a
# busy CI machine is slow (as test_allocation_and_offsets did under load).
settings.register_profile("rockmq", deadline=None)
settings.load_profile("rockmq")

sys.path.insert(0, str(Path(__file__).parent))
from broker_process import AUTH_ARGS, BrokerProcess  # noqa: E402
from etcd_process import EtcdProcess  # noqa: E402
from harness import BrokerHarness  # noqa: E402

_names = itertools.count()

# The directories whose files run longest, first: scripts/test's two workers (pytest-xdist, --dist
# loadfile --no-loadscope-reorder) take whole files in this order, so the Spark files (a Spark driver
# of their own each: minutes per file) and the chaos and cluster ones start while the other worker
# has hundreds of short files left to take, not at the end with one worker idle.
_LONGEST_FIRST = ("spark", "chaos", "cluster")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest directories first (`_LONGEST_FIRST`); within each, the files and tests keep their order."""
    here = Path(__file__).parent

    def rank(item: pytest.Item) -> int:
        parts = item.path.relative_to(here).parts if item.path.is_relative_to(here) else ()
        return _LONGEST_FIRST.index(parts[0]) if parts and parts[0] in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory):
    """One broker shared by a test session; tests use their own topic and group names."""
    b = BrokerProcess(tmp_path_factory.mktemp("broker"), "--max-attempts", "3").start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory):
    """A broker run with --auth, one per test module; its super user is AUTH_ADMIN / AUTH_SECRET
    (broker_process.py)."""
    b = BrokerProcess(tmp_path_factory.mktemp("auth"), *AUTH_ARGS).start()
    yield b
    b.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path):
    """A private broker for tests that stop, restart or kill it."""
    b = BrokerProcess(tmp_path / "data").start()
    yield b
    b.kill()


@pytest.fixture
def harness(tmp_path: Path, request: pytest.FixtureRequest):
    """The real broker in this process with short timings (tests/harness.py); settings overrides
    come from `@pytest.mark.broker_settings(name=value, ...)`."""
    marker = request.node.get_closest_marker("broker_settings")
    h = BrokerHarness(tmp_path / "data", **(marker.kwargs if marker else {})).start()
    yield h
    h.stop()


@pytest.fixture
def unique():
    """unique('topic') -> 'topic-7': a name no other test uses."""
    return lambda prefix: f"{prefix}-{next(_names)}-{id(object()) % 10000}"


@pytest.fixture
def etcd(tmp_path: Path):
    """A real etcd on loopback ports (tests/etcd_process.py), killed after the test."""
    e = EtcdProcess(tmp_path / "etcd").start()
    yield e
    e.kill()
