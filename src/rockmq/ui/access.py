"""The dashboard's Access pages (auth on): rockmq's users and ACL entries, and the forms that create a user,
disable or enable one, grant and revoke an entry. Each change is the admin call `rockmq user ...` /
`rockmq acl ...` makes (proto/rockmq/admin/v1/users.proto, acl.proto), signed as the viewer: only super
users may, so anyone else gets the broker's refusal on a 403 page, and each lands in the broker's audit
log as the CLI's would. A created user's secret is typed in the form or, left empty, generated here and
shown once on the result page (never logged, never kept). Without auth there are no users: 404."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from aiohttp import web

from rockmq.protocol import acl, acl_grpc, users, users_grpc
from rockmq.ui import render
from rockmq.ui.actions import Handler, hidden_csrf
from rockmq.ui.models import PAGE_SIZE

if TYPE_CHECKING:
    from rockmq.ui.routes import Page, Viewer

TIMEOUT_S = 10.0  # each call (the CLI's REQUEST_TIMEOUT_S)
SECRET_BYTES = 24  # a generated secret: 32 URL-safe characters
AUTH_OFF = "Access control is off: start the broker with --auth to have users and ACLs."
ACTIONS = ("Pub", "Sub", "Create", "Update", "Delete", "Get", "List", "All")


def split_list(text: str) -> list[str]:
    """"Pub, Sub" -> ["Pub", "Sub"] (the CLI's --actions and --source-ip are read the same way)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def grant_entry(form: dict[str, str]) -> acl.AclEntry:
    """The grant form -> the AclEntry `rockmq acl grant` sends; ValueError with a readable line."""
    user, resource = form.get("user", "").strip(), form.get("resource", "").strip()
    actions = split_list(form.get("actions", ""))
    if not user or not resource or not actions:
        raise ValueError("Give the user, the resource and at least one action.")
    return acl.AclEntry(user=user, resource=resource, actions=actions, source_ips=split_list(form.get("source_ips", "")),
                        decision="Deny" if form.get("deny") == "yes" else "Allow")


def new_secret(given: str) -> tuple[str, bool]:
    """The created user's secret: the one typed, else a generated one -> (secret, generated)."""
    return (given, False) if given else (secrets.token_urlsafe(SECRET_BYTES), True)


def _confirm(what: str) -> str:
    return f'<label><input type="checkbox" name="confirm" value="yes" required> {escape(what)}</label>'


def _row_form(action: str, token: str, fields: dict[str, str], button: str, confirm: str = "") -> str:
    """A one-button form inside a table row (disable, enable, revoke)."""
    hidden = "".join(f'<input type="hidden" name="{k}" value="{escape(v)}">' for k, v in fields.items())
    return (f'<form method="post" action="/ui/access/{action}" class="row">{hidden_csrf(token)}{hidden}'
            f'{_confirm(confirm) if confirm else ""}<button>{escape(button)}</button></form>')


def users_table(listed: Sequence[users.UserInfo], token: str) -> str:
    rows = "".join(
        f"<tr><td>{escape(u.name)}</td><td>{'enabled' if u.enabled else 'disabled'}</td>"
        f"<td>{'super user' if u.super_user else 'user'}</td><td>"
        + (_row_form("update", token, {"name": u.name, "enabled": "no"}, "Disable", "sure")
           if u.enabled else _row_form("update", token, {"name": u.name, "enabled": "yes"}, "Enable"))
        + "</td></tr>" for u in listed)
    empty = '<p class="empty">None.</p>' if not listed else ""
    return ('<table id="users"><thead><tr><th>name</th><th>state</th><th>kind</th><th></th></tr></thead>'
            f"<tbody>{rows}</tbody></table>{empty}")


def acls_table(entries: Sequence[acl.AclEntry], token: str) -> str:
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in (
            e.user, e.resource, ",".join(e.actions), ",".join(e.source_ips) or "anywhere", e.decision))
        + f'<td>{_row_form("revoke", token, {"user": e.user, "resource": e.resource}, "Revoke", "sure")}</td></tr>'
        for e in entries)
    empty = '<p class="empty">None.</p>' if not entries else ""
    return ('<table id="acls"><thead><tr><th>user</th><th>resource</th><th>actions</th><th>from</th>'
            f"<th>decision</th><th></th></tr></thead><tbody>{rows}</tbody></table>{empty}")


def create_form(token: str) -> str:
    return ('<h2>Create a user</h2><form method="post" action="/ui/access/create" id="create-user" class="change">'
            f'{hidden_csrf(token)}<label>Name <input name="name" required autocomplete="off"></label>'
            '<label>Secret <input name="secret" type="password" autocomplete="new-password" '
            'placeholder="empty: generate one"></label>'
            '<label><input type="checkbox" name="super_user" value="yes"> a super user: may do anything</label>'
            '<button>Create</button></form>')


def grant_form(token: str) -> str:
    return ('<h2>Grant</h2><form method="post" action="/ui/access/grant" id="grant" class="change">'
            f'{hidden_csrf(token)}<label>User <input name="user" required></label>'
            '<label>Resource <input name="resource" required placeholder="Topic:NAME, Group:PREFIX*, *, Cluster">'
            f'</label><label>Actions <input name="actions" required placeholder="{", ".join(ACTIONS)}"></label>'
            '<label>Only from <input name="source_ips" placeholder="IPs or CIDRs, comma separated; empty: anywhere">'
            '</label><label><input type="checkbox" name="deny" value="yes"> deny these actions instead</label>'
            '<button>Grant</button></form>')


@dataclass(frozen=True)
class Shown:
    """A page of the Access page: up to PAGE_SIZE users and PAGE_SIZE ACL entries, paged together (`?page=`)."""

    user_rows: Sequence[users.UserInfo]
    entry_rows: Sequence[acl.AclEntry]
    number: int
    pages: int
    counts: str  # "12 users, 30 ACL entries"

    @classmethod
    def of(cls, listed: Sequence[users.UserInfo], entries: Sequence[acl.AclEntry], number: int) -> Shown:
        pages = max(1, -(-max(len(listed), len(entries)) // PAGE_SIZE))
        number = min(max(number, 1), pages)
        at = slice((number - 1) * PAGE_SIZE, number * PAGE_SIZE)
        return cls(sorted(listed, key=lambda u: u.name)[at], sorted(entries, key=lambda e: (e.user, e.resource))[at],
                   number, pages, f"{len(listed):,} users, {len(entries):,} ACL entries")


@dataclass
class AccessPages:
    """The Access pages over the broker's Users and Acls services (`users`, `acls`: where they are now)."""

    users: Callable[[], users_grpc.UsersStub]
    acls: Callable[[], acl_grpc.AclsStub]
    auth: bool

    async def page(self, request: web.Request, v: Viewer) -> web.Response:
        """GET /ui/access: the users and the ACL entries, with the forms."""
        if not self.auth:
            return _html(render.page("Access", render.error(AUTH_OFF), v.csrf), 404)
        listed = await self.users().ListUsers(users.ListUsersRequest(), timeout=TIMEOUT_S, metadata=_signed(v))
        entries = await self.acls().ListAcls(acl.ListAclsRequest(), timeout=TIMEOUT_S, metadata=_signed(v))
        text, asked = request.query.get("filter", ""), request.query.get("page", "1")
        shown = Shown.of([u for u in listed.users if text in u.name], [e for e in entries.entries if text in e.user],
                         int(asked) if asked.isdigit() else 1)
        body = (f"{render.filter_form('/ui/access', text)}<h2>Users</h2>{users_table(shown.user_rows, v.token)}"
                f"<h2>ACL entries</h2>{acls_table(shown.entry_rows, v.token)}"
                f"{render.pager('/ui/access', text, shown.number, shown.pages, shown.counts)}"
                f"{create_form(v.token)}{grant_form(v.token)}")
        return _html(render.page("Access", body, v.csrf))

    async def create(self, request: web.Request, v: Viewer) -> web.Response:
        """POST /ui/access/create: name, secret (empty: generated), super_user."""
        form = await _form(request)
        name = form.get("name", "").strip()
        if not name:
            return _result("User not created", v, error="Give the new user's name.")
        secret, generated = new_secret(form.get("secret", ""))
        info = await self.users().CreateUser(users.CreateUserRequest(
            name=name, secret=secret, super_user=form.get("super_user") == "yes"), timeout=TIMEOUT_S, metadata=_signed(v))
        shown = ('<p>Its secret, shown this once (it is not kept: copy it now): <code id="secret">'
                 f"{escape(secret)}</code></p>") if generated else ""
        response = _result("User created", v, f"Created {'super user' if info.super_user else 'user'} {info.name}.",
                           shown)
        response.headers["Cache-Control"] = "no-store"  # the secret stays out of caches and history
        return response

    async def update(self, request: web.Request, v: Viewer) -> web.Response:
        """POST /ui/access/update: name, enabled (yes|no); disabling needs confirm=yes."""
        form = await _form(request)
        enabled = form.get("enabled") == "yes"
        if not enabled and form.get("confirm") != "yes":
            return _result("User not disabled", v, error="Tick “sure” to disable the user: its requests are refused.")
        info = await self.users().UpdateUser(users.UpdateUserRequest(name=form.get("name", ""), enabled=enabled),
                                             timeout=TIMEOUT_S, metadata=_signed(v))
        return _result("User updated", v, f"User {info.name} is {'enabled' if info.enabled else 'disabled'}.")

    async def grant(self, request: web.Request, v: Viewer) -> web.Response:
        """POST /ui/access/grant: user, resource, actions, source_ips, deny."""
        try:
            entry = grant_entry(await _form(request))
        except ValueError as e:
            return _result("Not granted", v, error=str(e))
        await self.acls().GrantAcl(entry, timeout=TIMEOUT_S, metadata=_signed(v))
        verb = "Denied" if entry.decision == "Deny" else "Granted"
        return _result("Granted", v, f"{verb} {entry.user} {','.join(entry.actions)} on {entry.resource}.")

    async def revoke(self, request: web.Request, v: Viewer) -> web.Response:
        """POST /ui/access/revoke: user, resource, confirm=yes."""
        form = await _form(request)
        if form.get("confirm") != "yes":
            return _result("Not revoked", v, error="Tick “sure” to revoke the entry.")
        gone = (await self.acls().RevokeAcl(acl.RevokeAclRequest(user=form.get("user", ""),
                                                                 resource=form.get("resource", "")),
                                            timeout=TIMEOUT_S, metadata=_signed(v))).revoked
        return _result("Revoked", v, f"Revoked {gone.user}'s entry on {gone.resource} "
                                     f"({gone.decision} {','.join(gone.actions)}).")

    def add(self, app: web.Application, guarded: Callable[[Page, bool], Handler]) -> None:
        app.router.add_get("/ui/access", guarded(self.page, False), allow_head=False)
        for name, change in (("create", self.create), ("update", self.update), ("grant", self.grant),
                             ("revoke", self.revoke)):
            app.router.add_post(f"/ui/access/{name}", guarded(self._with_auth(change), True))

    def _with_auth(self, change: Page) -> Page:
        """A change of users or ACLs: none without auth (--ui-admin alone has no users to change)."""

        async def page(request: web.Request, v: Viewer) -> web.StreamResponse:
            if not self.auth:
                return _html(render.page("Access", render.error(AUTH_OFF), v.csrf), 404)
            return await change(request, v)

        return page


def _signed(v: Viewer) -> tuple[tuple[str, str], ...]:
    return v.admin.user.headers() if v.admin.user else ()


async def _form(request: web.Request) -> dict[str, str]:
    return {k: str(value) for k, value in (await request.post()).items()}


def _result(title: str, v: Viewer, line: str = "", more: str = "", error: str = "") -> web.Response:
    """A change's result page, linking back: its line, or its error (400)."""
    said = render.error(error) if error else f'<p class="done">{escape(line)}</p>'
    return _html(render.page(title, f'{said}{more}<p><a href="/ui/access">Back to Access</a></p>', v.csrf),
                 400 if error else 200)


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")
