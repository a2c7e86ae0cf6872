"""rockmq's Acls service (`rockmq acl grant|revoke|list`): the broker's ACL entries, changed by
super users only (the seam checks; auth/permissions.py), on a broker run with --auth (elsewhere
anyone could call), as users are, and like them handed on to every other live broker of a cluster
(broker/cluster/everywhere.py). Refusals are gRPC statuses with one readable line, as Admin's."""

from __future__ import annotations

import grpc

from rockmq.auth.access import AccessControl
from rockmq.auth.acl import AclError, Entry, Resource, parse_actions, parse_decision, parse_networks
from rockmq.auth.acl_store import NoSuchEntry
from rockmq.auth.seam import identity
from rockmq.auth.users import UserError, check_name
from rockmq.broker.api.replies import admin_call
from rockmq.broker.cluster.everywhere import hand_on
from rockmq.broker.cluster.routes import Cluster
from rockmq.plumbing.requests import Context
from rockmq.protocol import acl, acl_grpc, pb
from rockmq.protocol.errors import BrokerError


def _as_message(user: str, e: Entry) -> acl.AclEntry:
    return acl.AclEntry(user=user, resource=str(e.resource), actions=sorted(a.value for a in e.actions),
                        source_ips=[str(n) for n in e.source_ips], decision=e.decision.value)


AUTH_OFF = "authentication is off on this broker: ACLs are managed on a broker run with --auth"


def _user(name: str) -> str:
    try:
        return check_name(name)
    except UserError as e:
        raise BrokerError(pb.BAD_REQUEST, str(e)) from None


class AclsServicer(acl_grpc.AclsServicer):
    def __init__(self, access: AccessControl, auth_enabled: bool, cluster: Cluster | None = None) -> None:
        self.access = access
        self.auth_enabled = auth_enabled
        self.cluster = cluster

    def _on(self) -> None:
        if not self.auth_enabled:
            raise BrokerError(pb.FORBIDDEN, AUTH_OFF)

    @admin_call
    async def GrantAcl(self, request: acl.AclEntry, context: Context) -> acl.GrantAclResponse:
        self._on()
        try:
            entry = Entry(Resource.parse(request.resource), parse_actions(list(request.actions)),
                          parse_networks(request.source_ips), parse_decision(request.decision or "Allow"))
        except AclError as e:
            raise BrokerError(pb.BAD_REQUEST, str(e)) from None
        self.access.grant(identity(context), _user(request.user), entry)
        await hand_on(self.cluster, acl_grpc.AclsStub, "GrantAcl", request)
        return acl.GrantAclResponse()

    @admin_call
    async def RevokeAcl(self, request: acl.RevokeAclRequest, context: Context) -> acl.RevokeAclResponse:
        self._on()
        try:
            gone = self.access.revoke(identity(context), request.user, Resource.parse(request.resource))
        except NoSuchEntry as e:
            raise BrokerError(pb.NOT_FOUND, str(e)) from None
        except AclError as e:
            raise BrokerError(pb.BAD_REQUEST, str(e)) from None
        await hand_on(self.cluster, acl_grpc.AclsStub, "RevokeAcl", request, grpc.StatusCode.NOT_FOUND)
        return acl.RevokeAclResponse(revoked=_as_message(request.user, gone))

    @admin_call
    def ListAcls(self, request: acl.ListAclsRequest) -> acl.ListAclsResponse:
        self._on()
        return acl.ListAclsResponse(entries=[_as_message(u, e) for u, e in self.access.entries(request.user)])
