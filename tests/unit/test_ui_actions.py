"""The pure parts of the dashboard's changes (rockmq/ui/actions.py): where a reset goes, the dead-letter
page's time range, the resend rate, the browser CSRF tokens of a dashboard without auth, the reset form."""

from __future__ import annotations

import pytest

from rockmq.ui.actions import BrowserTokens, resend_rate, reset_form, reset_target, time_range


def test_reset_target():
    assert reset_target("earliest", "ignored") == ("earliest", 0)
    assert reset_target("latest", "") == ("latest", 0)
    assert reset_target("time", "2026-11-29T10:00:00+01:00") == ("time", 1_795_942_800_000)
    for to, when, says in (("time", " ", "Give the time"), ("time", "2026-11-29T10:00:00", "zone"),
                           ("tomorrow", "", "Choose earliest")):
        with pytest.raises(ValueError, match=says):
            reset_target(to, when)


def test_time_range():
    assert time_range({}) == (0, 0)
    assert time_range({"from": "2026-11-29T09:00:00Z", "to": ""}) == (1_795_942_800_000, 0)
    with pytest.raises(ValueError, match="invalid time"):
        time_range({"to": "noon"})


def test_resend_rate():
    assert resend_rate("100") == 100
    for bad in ("0", "-3", "x", "", "10001"):
        with pytest.raises(ValueError, match="messages per second"):
            resend_rate(bad)


def test_browser_tokens_are_the_cookies_hmac_under_a_key_of_the_process():
    tokens, other = BrowserTokens(), BrowserTokens()
    cookie = tokens.new_cookie()
    assert tokens.token(cookie) == tokens.token(cookie) != tokens.token(tokens.new_cookie())
    assert other.token(cookie) != tokens.token(cookie)  # a restart (a new key) makes old forms stale
    assert tokens.token("") == ""  # no cookie: no token, so no change passes


def test_reset_form_carries_the_token_and_needs_the_confirmation():
    form = reset_form("g/<1>", ["t&1", "t2"], "tok")
    assert 'action="/ui/groups/g%2F%3C1%3E/reset"' in form and 'name="csrf" value="tok"' in form
    assert "<option>t&amp;1</option><option>t2</option>" in form
    assert 'name="confirm" value="yes" required' in form and "I understand" in form
