"""A real headless browser for the dashboard's tests (issue 31): Debian's Chromium, driven by playwright-core
through tests/ui/driver.mjs, a Node process that reads one JSON command a line and answers one JSON line.

Python keeps the test logic (what to wait for, what to poll, what to assert); the driver only turns commands into
Playwright calls. One Browser (one Chromium) serves a test module, since starting it costs about a second; each
test gets a fresh context (`Browser.page`: no cookies or state carried over). Only 127.0.0.1 URLs are opened, and
the driver refuses any request the page makes elsewhere (`Page.offsite`): the dashboard must work on a closed
network. Screenshots go to the test's tmp dir and, when ROCKMQ_UI_SHOTS=DIR is set, to DIR as well, for people to
look at.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
CHROMIUM = os.environ.get("ROCKMQ_CHROMIUM", "/usr/bin/chromium")
SHOTS_ENV = "ROCKMQ_UI_SHOTS"
STEP_TIMEOUT_S = 10.0  # the driver's own Playwright timeout; Python waits a little longer for its answer


class BrowserError(AssertionError):
    """A command the browser could not do (a selector not found in time, a navigation refused, ...)."""


class Browser:
    """One headless Chromium behind tests/ui/driver.mjs; `page()` hands out a fresh page."""

    def __init__(self) -> None:
        missing = [what for what, ok in (("Debian's chromium (apt-get install chromium)", Path(CHROMIUM).exists()),
                                         ("tests/ui/node_modules (npm ci in tests/ui)", (HERE / "node_modules").exists()),
                                         ("node", shutil.which("node") is not None)) if not ok]
        if missing:
            reason = "the browser tests need " + ", ".join(missing)
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"{reason}: CI must have them (.ci/run installs them)")
            pytest.skip(reason)
        started = time.monotonic()
        env = {**os.environ, "ROCKMQ_CHROMIUM": CHROMIUM, "ROCKMQ_UI_TIMEOUT_MS": str(int(STEP_TIMEOUT_S * 1000))}
        self._log = tempfile.TemporaryFile("w+")  # the driver's stderr: a file, so it can never block on a full pipe
        self._proc = subprocess.Popen(["node", str(HERE / "driver.mjs")], cwd=HERE, env=env, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        self._replies: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.version = self._answer(30.0)  # the first line: Chromium's version, once it runs
        self.startup_s = time.monotonic() - started

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._replies.put(line)

    def _answer(self, timeout: float) -> Any:
        try:
            reply = json.loads(self._replies.get(timeout=timeout))
        except queue.Empty:
            log = self._stderr()
            self.close()
            raise BrowserError(f"the browser driver did not answer within {timeout:.0f} s:\n{log}") from None
        if not reply["ok"]:
            raise BrowserError(reply["error"])
        return reply["value"]

    def _stderr(self) -> str:
        self._log.seek(0)
        return self._log.read()[-4000:]

    def call(self, op: str, **args: Any) -> Any:
        """One driver command (driver.mjs `ops`) and its answer."""
        if self._proc.poll() is not None:
            raise BrowserError(f"the browser driver exited ({self._proc.returncode}):\n{self._stderr()}")
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self._proc.stdin.flush()
        return self._answer(STEP_TIMEOUT_S + 5)

    def page(self, shots: Path, width: int = 1280, height: int = 800) -> Page:
        """A fresh page (a new browser context) whose screenshots go to `shots`."""
        self.call("fresh", width=width, height=height)
        return Page(self, shots)

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the driver closes Chromium and exits at the end of its input
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()


def _loopback(url: str) -> str:
    if not url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")):
        raise ValueError(f"the browser tests open only 127.0.0.1 URLs, not {url}")
    return url


class Page:
    """The browser's current page: navigate, read, click, fill, screenshot. Selectors are Playwright's (CSS)."""

    def __init__(self, browser: Browser, shots: Path) -> None:
        self._call = browser.call
        self._shots = shots

    def goto(self, url: str) -> int:
        """Open `url` and wait for its load event; -> the HTTP status."""
        status: int = self._call("goto", url=_loopback(url))["status"]
        return status

    @property
    def url(self) -> str:
        url: str = self._call("url")
        return url

    def title(self) -> str:
        title: str = self._call("title")
        return title

    def wait(self, selector: str, state: str = "visible", timeout: float = STEP_TIMEOUT_S) -> None:
        """Until `selector` is visible (or "attached", "hidden", "detached"); BrowserError after `timeout` s."""
        self._call("wait", selector=selector, state=state, timeout=int(min(timeout, STEP_TIMEOUT_S) * 1000))

    def count(self, selector: str) -> int:
        n: int = self._call("count", selector=selector)
        return n

    def text(self, selector: str) -> str:
        """The first match's rendered text, trimmed (waits for it)."""
        text: str = self._call("text", selector=selector)
        return text

    def texts(self, selector: str) -> list[str]:
        """Every match's rendered text, trimmed (does not wait: [] when none)."""
        texts: list[str] = self._call("texts", selector=selector)
        return texts

    def attr(self, selector: str, name: str) -> str | None:
        value: str | None = self._call("attr", selector=selector, name=name)
        return value

    def attrs(self, selector: str, name: str) -> list[str | None]:
        values: list[str | None] = self._call("attrs", selector=selector, name=name)
        return values

    def rows(self, table: str) -> list[list[str]]:
        """The cells' texts of each body row of `table` (a selector), header rows (th only) left out."""
        cells: list[list[str]] = self._call("rows", selector=table)
        return cells

    def click(self, selector: str, navigates: bool = True) -> str:
        """Click the first match; with `navigates`, wait for the page it leads to. -> the URL after."""
        url: str = self._call("click", selector=selector, navigates=navigates)
        return url

    def fill(self, selector: str, value: str) -> None:
        self._call("fill", selector=selector, value=value)

    def remove(self, selector: str) -> int:
        """Take the elements out of the page (a form's hidden field, as a forger would) -> how many."""
        removed: int = self._call("remove", selector=selector)
        return removed

    def press(self, selector: str, key: str, navigates: bool = False) -> str:
        url: str = self._call("press", selector=selector, key=key, navigates=navigates)
        return url

    def screenshot(self, name: str) -> Path:
        """A full-page PNG `name`.png in the test's dir, and in $ROCKMQ_UI_SHOTS when set."""
        path = self._shots / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        self._call("screenshot", path=str(path))
        if extra := os.environ.get(SHOTS_ENV):
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / path.name)
        return path

    def offsite(self) -> list[str]:
        """The requests the page tried to make to anything but 127.0.0.1 (refused)."""
        urls: list[str] = self._call("offsite")
        return urls

    def errors(self) -> list[str]:
        """The page's uncaught JavaScript errors and console errors so far."""
        errors: list[str] = self._call("errors")
        return errors
