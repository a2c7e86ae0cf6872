"""rockmq's Users service: `rockmq user create|update|delete|list`, admin calls of a super user
(the seam lets no one else through: auth/serving.py SUPER_ONLY). Every change is audited, made or
refused. Users are managed only on a broker run with --auth (elsewhere anyone could call).

In a cluster (name servers; `--workers N` too) a change made here is handed on to every other live
broker, signed with the cluster's inner credentials and marked `local`, so that a user signs in
anywhere; a broker that cannot be reached, or refuses, is named in the answer (repeat the change
once it is back: a user created or deleted already there is no error)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import grpc

from rockmq.auth import audit
from rockmq.auth.identity import Identity
from rockmq.auth.seam import identity
from rockmq.auth.users import NoSuchUser, User, UserError, Users
from rockmq.broker.api.replies import admin_call
from rockmq.broker.cluster.everywhere import hand_on
from rockmq.broker.cluster.routes import Cluster
from rockmq.plumbing.requests import Context
from rockmq.protocol import pb, users_grpc
from rockmq.protocol import users as api
from rockmq.protocol.errors import AlreadyExists, BrokerError

T = TypeVar("T")
AUTH_OFF = "authentication is off on this broker: users are managed on a broker run with --auth"


def _info(user: User) -> api.UserInfo:
    return api.UserInfo(name=user.name, super_user=user.super_user, enabled=user.enabled)


class UsersServicer(users_grpc.UsersServicer):
    def __init__(self, users: Users, auth_enabled: bool, cluster: Cluster | None = None,
                 forget: Callable[[Identity, str], None] | None = None) -> None:
        self.users = users
        self.auth_enabled = auth_enabled
        self.cluster = cluster
        self.forget = forget  # a deleted user's grants go with it (a new user of that name starts with none)

    def _change(self, context: Context, name: str, change: str, make: Callable[[], T]) -> T:
        """Make a change of user `name`, turning the store's refusals into statuses; audited either way."""
        try:
            if not self.auth_enabled:
                raise BrokerError(pb.FORBIDDEN, AUTH_OFF)
            if self.users.get(name) is None and not change.startswith("create"):
                raise NoSuchUser(f"no user {name!r}")
            result = make()
        except NoSuchUser as e:
            self._audit(context, name, change, str(e))
            raise BrokerError(pb.NOT_FOUND, str(e)) from None
        except UserError as e:
            self._audit(context, name, change, str(e))
            raise BrokerError(pb.BAD_REQUEST, str(e)) from None
        except BrokerError as e:
            self._audit(context, name, change, e.message)
            raise
        self._audit(context, name, change, "ok")
        return result

    @staticmethod
    def _audit(context: Context, name: str, change: str, result: str) -> None:
        audit.record("user-change", str(identity(context)), f"{change} user {name}", result)

    def _keep_a_super_user(self, name: str) -> None:
        """Never leave the broker without an enabled super user: nobody could manage it again."""
        if [u.name for u in self.users.all() if u.super_user and u.enabled] == [name]:
            raise BrokerError(pb.BAD_REQUEST, f"user {name!r} is the last enabled super user: create another first")

    @admin_call
    async def CreateUser(self, request: api.CreateUserRequest, context: Context) -> api.UserInfo:
        def create() -> User:
            if self.users.get(request.name) is not None:
                raise AlreadyExists(f"user {request.name!r} exists")
            return self.users.create(request.name, request.secret, request.super_user)

        info = _info(self._change(context, request.name, "create super" if request.super_user else "create", create))
        await hand_on(self.cluster, users_grpc.UsersStub, "CreateUser", request, grpc.StatusCode.ALREADY_EXISTS)
        return info

    @admin_call
    async def UpdateUser(self, request: api.UpdateUserRequest, context: Context) -> api.UserInfo:
        secret = request.secret if request.HasField("secret") else None
        enabled = request.enabled if request.HasField("enabled") else None
        change = "update " + ",".join([*(["secret"] if secret is not None else []),
                                       *([] if enabled is None else ["enable" if enabled else "disable"])] or ["nothing"])

        def update() -> User:
            if enabled is False:
                self._keep_a_super_user(request.name)
            return self.users.update(request.name, secret, enabled)

        info = _info(self._change(context, request.name, change, update))
        await hand_on(self.cluster, users_grpc.UsersStub, "UpdateUser", request, grpc.StatusCode.OK)
        return info

    @admin_call
    async def DeleteUser(self, request: api.UserRequest, context: Context) -> api.DeleteUserResponse:
        def delete() -> None:
            self._keep_a_super_user(request.name)
            self.users.delete(request.name)
            if self.forget is not None:
                self.forget(identity(context), request.name)

        self._change(context, request.name, "delete", delete)
        await hand_on(self.cluster, users_grpc.UsersStub, "DeleteUser", request, grpc.StatusCode.NOT_FOUND)
        return api.DeleteUserResponse()

    @admin_call
    def ListUsers(self, request: api.ListUsersRequest, context: Context) -> api.ListUsersResponse:
        if not self.auth_enabled:
            raise BrokerError(pb.FORBIDDEN, AUTH_OFF)
        return api.ListUsersResponse(users=[_info(u) for u in self.users.all()])
