"""A broker with `--auth`, three users and the grants the ACL tests start from: alice may publish
to TOPIC, bob may consume it through GROUP, admin is a super user. Admin calls are signed here."""

from __future__ import annotations

from pathlib import Path

import grpc
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT

from rockmq.auth.users import Users
from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import acl, acl_grpc, admin, admin_grpc

ADMIN = "admin"
SECRETS = {ADMIN: "s3cret-admin", "alice": "alice-secret", "bob": "bob-secret"}
TOPIC, GROUP = "acl-orders", "acl-billing"


def signed(user: str) -> tuple[tuple[str, str], ...]:
    return (*META, *Credentials(user, SECRETS[user]).headers())


def grant(channel: grpc.Channel, user: str, resource: str, actions: str, *, deny: bool = False, by: str = ADMIN) -> None:
    acl_grpc.AclsStub(channel).GrantAcl(acl.AclEntry(user=user, resource=resource, actions=actions.split(","),
                                                     decision="Deny" if deny else "Allow"),
                                        metadata=signed(by), timeout=RPC_TIMEOUT)


def start_acl_broker(data_dir: Path) -> BrokerProcess:
    users = Users(data_dir)
    for name, secret in SECRETS.items():
        users.create(name, secret, super_user=name == ADMIN)
    b = BrokerProcess(data_dir, "--auth").start()
    with open_channel(b.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC), metadata=signed(ADMIN), timeout=RPC_TIMEOUT)
        grant(ch, "alice", f"Topic:{TOPIC}", "Pub")
        grant(ch, "bob", f"Topic:{TOPIC}", "Sub")
        grant(ch, "bob", f"Group:{GROUP}", "Sub")
    return b
