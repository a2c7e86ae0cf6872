"""Fixtures of the browser tests: one headless Chromium per test module (`browser`), a fresh page per test
(`page`, its screenshots in the test's tmp dir and $ROCKMQ_UI_SHOTS), and a broker with its HTTP port
(`ui_broker`) for the dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Browser, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    yield b
    b.close()


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Page:
    return browser.page(tmp_path)
