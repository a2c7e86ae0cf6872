"""Authentication as a broker serves it: its users, the first super user, the seam."""

from __future__ import annotations

import logging

from rockmq.auth.inner import inner_seam, inner_user
from rockmq.auth.seam import Authorize, AuthSeam
from rockmq.auth.users import UserError, Users
from rockmq.config import Settings

log = logging.getLogger(__name__)
# Admin calls only a super user may make (service/Method); acl widens the rest with grants.
SUPER_ONLY = frozenset(f"rockmq.admin.v1.Users/{m}" for m in ("CreateUser", "UpdateUser", "DeleteUser", "ListUsers"))


class AuthSetupError(Exception):
    """Authentication cannot start as configured; the message is the one line to show."""


def open_users(settings: Settings) -> Users:
    """The broker's users; with auth on and none yet, the first super user from admin_user/admin_secret."""
    try:
        users = Users(settings.data_path)
        if settings.auth_enabled and not len(users):
            if not settings.admin_user:
                raise AuthSetupError("authentication is on and there are no users yet: give the first super user with "
                                     "--admin-user NAME --admin-secret S (or ROCKMQ_ADMIN_USER / ROCKMQ_ADMIN_SECRET)")
            users.create(settings.admin_user, settings.admin_secret, super_user=True)
            log.warning("created the first super user %r", settings.admin_user)
    except UserError as e:
        raise AuthSetupError(str(e)) from None
    return users


def seam(users: Users, settings: Settings, authorize: Authorize | None = None) -> AuthSeam:
    """The broker's seam: its users, the cluster's inner credentials for the control plane, and
    `authorize` (auth/access.py) deciding what each may do."""
    return inner_seam(inner_user(settings), settings.auth_max_clock_skew_s, users, SUPER_ONLY, authorize)
