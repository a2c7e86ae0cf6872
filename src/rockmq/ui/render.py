"""The pages' HTML from their models: plain Python and html.escape (no template engine: the pages are
small and rockmq takes no dependency for them). Every page: the nav, its title, one stylesheet and one
script of /ui/static/."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from rockmq.ui.models import Listing, Overview, Table

NAV = (("/ui/", "Overview"), ("/ui/topics", "Topics"), ("/ui/groups", "Groups"), ("/ui/messages", "Messages"),
       ("/ui/dlq", "Dead letters"))


def page(title: str, body: str, csrf: str = "") -> str:
    """A whole page: `title` is its <title> (after "rockmq · ") and its <h1>; `body` is HTML already;
    with a session's `csrf` token (auth on), the nav has the Access link and its log-out button (a POST
    that carries the token)."""
    nav = "".join(f'<a href="{href}">{name}</a>' for href, name in NAV)
    if csrf:
        nav += ('<a href="/ui/access">Access</a>'
                f'<form method="post" action="/ui/logout" class="logout"><input type="hidden" name="csrf" '
                f'value="{escape(csrf)}"><button>Log out</button></form>')
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>rockmq · {escape(title)}</title>"
            f'<link rel="stylesheet" href="/ui/static/ui.css"><script defer src="/ui/static/ui.js"></script></head>'
            f"<body><nav>{nav}</nav><main><h1>{escape(title)}</h1>{body}</main></body></html>\n")


def table(id_: str, t: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    rows = "".join("<tr>" + "".join(
        f'<td><a href="{escape(c.href)}">{escape(c.text)}</a></td>' if c.href else f"<td>{escape(c.text)}</td>"
        for c in row) + "</tr>" for row in t.rows)
    empty = '<p class="empty">None.</p>' if not t.rows else ""
    return f'<table id="{id_}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{empty}'


def error(message: str) -> str:
    return f'<p class="error">{escape(message)}</p>'


def unreachable(brokers: list[str]) -> str:
    """The warning a partial answer carries: brokers that did not answer."""
    return error(f"Not shown, did not answer: {', '.join(brokers)}") if brokers else ""


def login(message: str = "") -> str:
    """The login form (auth on): a rockmq user's access key and secret."""
    return page("Log in", (error(message) if message else "") + (
        '<form method="post" action="/ui/login" class="login"><label>Access key <input name="access_key" '
        'autocomplete="username" required></label><label>Secret <input name="secret" type="password" '
        'autocomplete="current-password" required></label><button>Log in</button></form>'))


def overview(o: Overview, csrf: str = "", live: str = "") -> str:
    """The overview; `live`: its charts and live tables' HTML (ui/live.py), after the brokers."""
    return page("Overview", f'<p>Messages in: <span id="rate-in">{escape(o.rate_in)}</span> '
                            f'<span class="muted">(as of <span id="as-of">{escape(o.as_of)}</span>)</span></p>'
                            f'<h2>Brokers</h2>{table("brokers", o.brokers)}{live}', csrf)


def listing(title: str, id_: str, path: str, listed: Listing, csrf: str = "") -> str:
    """A list page: a filter form (a GET: the URL can be bookmarked), the table, links to other pages."""
    return page(title, filter_form(path, listed.filter) + table(id_, listed.table)
                + pager(path, listed.filter, listed.page, listed.pages, f"{listed.total:,} {title.lower()}"), csrf)


def filter_form(path: str, text: str) -> str:
    """A list page's filter (a GET: the URL can be bookmarked)."""
    return (f'<form method="get" action="{path}"><input name="filter" value="{escape(text)}" '
            f'placeholder="name contains"><button>Filter</button></form>')


def pager(path: str, filter_text: str, number: int, pages: int, what: str) -> str:
    """"page N of M (what)" with links to the previous and next pages, keeping the filter."""
    links = []
    for to, label in ((number - 1, "previous"), (number + 1, "next")):
        if 1 <= to <= pages:
            query = urlencode({**({"filter": filter_text} if filter_text else {}), "page": to})
            links.append(f'<a rel="{label[:4]}" href="{path}?{escape(query)}">{label}</a>')
    return f'<p class="pager">page {number} of {pages} ({what}) {" ".join(links)}</p>'
