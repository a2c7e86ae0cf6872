"""The browser harness itself (tests/ui/browser.py), against a small page this test serves on 127.0.0.1: it opens
a page, waits for what its JavaScript writes, reads texts, rows and attributes, clicks a link, fills and submits a
form as a GET URL, refuses requests off 127.0.0.1, reports JavaScript errors and takes full-page screenshots."""

from __future__ import annotations

import html
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from browser import BrowserError, Page

INDEX = """<!doctype html><html><head><title>harness · Index</title></head><body>
<nav><a href="/">Index</a> <a id="next" href="/items">Items</a></nav>
<h1>Index</h1>
<p id="late">waiting</p>
<img src="http://192.0.2.1/offsite.png" alt="">
<form action="/search"><input name="q"><button type="submit">Search</button></form>
<script>setTimeout(() => { document.getElementById('late').textContent = 'written by script'; }, 300);</script>
</body></html>"""

ITEMS = """<!doctype html><html><head><title>harness · Items</title></head><body>
<h1>Items</h1><table id="items"><tr><th>name</th><th>count</th></tr>
<tr><td><a href="/items/a">a</a></td><td>1</td></tr><tr><td><a href="/items/b">b</a></td><td>2</td></tr></table>
<script>undefinedFunction();</script></body></html>"""


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/":
            body, status = INDEX, 200
        elif url.path == "/items":
            body, status = ITEMS, 200
        elif url.path == "/search":
            q = urllib.parse.parse_qs(url.query).get("q", [""])[0]
            body, status = f"<title>harness · Search</title><p id='q'>{html.escape(q)}</p>", 200
        else:
            body, status = "<p class='error'>no such page</p>", 404
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_open_wait_read_click_and_screenshot(page: Page, site: str, tmp_path) -> None:
    assert page.goto(f"{site}/") == 200
    assert page.title() == "harness · Index"
    page.wait("#late:text('written by script')")
    assert page.text("#late") == "written by script"
    assert page.attrs("nav a", "href") == ["/", "/items"]
    assert page.click("#next") == f"{site}/items"
    assert page.text("h1") == "Items"
    assert page.rows("#items") == [["a", "1"], ["b", "2"]]
    assert page.attr("#items td a", "href") == "/items/a"
    shot = page.screenshot("items")
    assert shot == tmp_path / "items.png" and shot.read_bytes().startswith(b"\x89PNG")
    assert any("undefinedFunction" in e for e in page.errors())


def test_a_form_is_a_get_url_and_offsite_requests_are_refused(page: Page, site: str) -> None:
    page.goto(f"{site}/")
    page.fill("input[name=q]", "key <1>")
    assert page.press("input[name=q]", "Enter", navigates=True) == f"{site}/search?q=key+%3C1%3E"
    assert page.text("#q") == "key <1>"
    assert page.offsite() == ["http://192.0.2.1/offsite.png"]
    [refused] = page.errors()  # the console error of the refused request, no other
    assert "ERR_BLOCKED_BY_CLIENT" in refused


def test_a_missing_page_and_a_missing_selector_are_errors(page: Page, site: str) -> None:
    assert page.goto(f"{site}/nope") == 404
    assert page.text(".error") == "no such page"
    assert page.count("#items") == 0
    with pytest.raises(BrowserError, match="Timeout"):
        page.wait("#never", state="attached", timeout=0.5)
    with pytest.raises(ValueError, match="only 127.0.0.1"):
        page.goto("http://example.com/")


def test_screenshots_also_go_to_the_shots_dir(page: Page, site: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ROCKMQ_UI_SHOTS", str(tmp_path / "shots"))
    page.goto(f"{site}/")
    page.screenshot("index")
    assert (tmp_path / "shots" / "index.png").read_bytes() == (tmp_path / "index.png").read_bytes()
