"""A client acts only for itself (issue 19 §4): with auth on, a Telemetry session, its heartbeats and
NotifyClientTermination belong to the user whose request made it, and a transaction to the user
who sent its half message — another user can neither end the session nor end the transaction nor
receive its check (FORBIDDEN, audited)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from broker_process import BrokerProcess
from mqwire import RPC_TIMEOUT, message
from telemetry_stream import TelemetryStream, producer_settings

from rockmq.auth.users import Users
from rockmq.plumbing.channels import client_metadata, open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

ALICE, BOB = ("alice", "alice-secret"), ("bob", "bob-secret")
ALICE_CLIENT = "alice-host@1@1@own"
TOPIC, GROUP = "own-txn", "own-g"


def as_user(user: tuple[str, str], client_id: str) -> tuple[tuple[str, str], ...]:
    return (*client_metadata(client_id), *Credentials(*user).headers())


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("ownership")
    users = Users(data)
    for name, secret in (ALICE, BOB):  # super users: the ownership rules hold for them too, whatever their grants
        users.create(name, secret, super_user=True)
    b = BrokerProcess(data, "--auth", env={"ROCKMQ_TXN_CHECK_INTERVAL_S": "0.3"}).start()
    yield b
    b.stop()


@pytest.fixture
def stub(broker: BrokerProcess) -> Iterator[svc.MessagingServiceStub]:
    with open_channel(broker.endpoint) as ch:
        yield svc.MessagingServiceStub(ch)


PRODUCER = producer_settings(TOPIC)
CONSUMER = pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(group=pb.Resource(name=GROUP)))


def _members(broker: BrokerProcess) -> list[str]:
    with open_channel(broker.endpoint) as ch:
        reply = admin_grpc.AdminStub(ch).ListMembers(admin.GroupRequest(name=GROUP, local=True),
                                                     metadata=as_user(ALICE, "admin-call"), timeout=RPC_TIMEOUT)
    return [m.client_id for m in reply.members]


def test_another_user_can_neither_end_nor_take_over_a_session(broker, stub):
    alice = TelemetryStream(stub, as_user(ALICE, ALICE_CLIENT), CONSUMER)
    try:
        assert alice.next(5).status.code == pb.OK
        heartbeat = rpc.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER, group=pb.Resource(name=GROUP))
        assert stub.Heartbeat(heartbeat, metadata=as_user(ALICE, ALICE_CLIENT), timeout=RPC_TIMEOUT).status.code == pb.OK
        assert ALICE_CLIENT in _members(broker)

        bye = rpc.NotifyClientTerminationRequest(group=pb.Resource(name=GROUP))
        st = stub.NotifyClientTermination(bye, metadata=as_user(BOB, ALICE_CLIENT), timeout=RPC_TIMEOUT).status
        assert st.code == pb.FORBIDDEN and "user 'bob' may not NotifyClientTermination" in st.message, st
        st = stub.Heartbeat(heartbeat, metadata=as_user(BOB, ALICE_CLIENT), timeout=RPC_TIMEOUT).status
        assert st.code == pb.FORBIDDEN, st
        bob = TelemetryStream(stub, as_user(BOB, ALICE_CLIENT), CONSUMER)
        assert bob.next(5).status.code == pb.FORBIDDEN
        bob.close()
        assert ALICE_CLIENT in _members(broker), "bob ended alice's session"
        assert any('authorization-refused who="bob"' in line for line in broker.log)

        st = stub.NotifyClientTermination(bye, metadata=as_user(ALICE, ALICE_CLIENT), timeout=RPC_TIMEOUT).status
        assert st.code == pb.OK and ALICE_CLIENT not in _members(broker)
    finally:
        alice.close()


def _half(body: str) -> pb.Message:
    msg = message(TOPIC, body)
    msg.system_properties.message_type = pb.TRANSACTION
    msg.system_properties.orphaned_transaction_recovery_duration.FromMilliseconds(200)
    return msg


def test_only_the_sender_ends_a_transaction_and_is_asked_about_it(broker, stub):
    with open_channel(broker.endpoint) as ch:
        admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC, queue_count=1, message_types=["TRANSACTION"]),
                                             metadata=as_user(ALICE, "admin-call"), timeout=RPC_TIMEOUT)
    alice = TelemetryStream(stub, as_user(ALICE, "alice-producer"), PRODUCER)
    bob = TelemetryStream(stub, as_user(BOB, "bob-producer"), PRODUCER)  # publishes the same topic
    try:
        sent = stub.SendMessage(rpc.SendMessageRequest(messages=[_half("pay order 7")]),
                                metadata=as_user(ALICE, "alice-producer"), timeout=RPC_TIMEOUT)
        [entry] = sent.entries
        assert entry.status.code == pb.OK, sent
        # Checks come every 0.3 s, taking turns among the topic's producers: only alice's get any.
        checks = [alice.next_check(5) for _ in range(3)]
        assert all(c is not None and c.recover_orphaned_transaction_command.transaction_id == entry.transaction_id
                   for c in checks), checks
        assert bob.next_check(0.5) is None, "bob was asked about alice's transaction"

        end = rpc.EndTransactionRequest(topic=pb.Resource(name=TOPIC), message_id=entry.message_id,
                                        transaction_id=entry.transaction_id, resolution=pb.ROLLBACK)
        st = stub.EndTransaction(end, metadata=as_user(BOB, "bob-producer"), timeout=RPC_TIMEOUT).status
        assert st.code == pb.FORBIDDEN and "may not end transaction" in st.message, st
        end.resolution = pb.COMMIT
        st = stub.EndTransaction(end, metadata=as_user(ALICE, "alice-producer"), timeout=RPC_TIMEOUT).status
        assert st.code == pb.OK, st
    finally:
        alice.close()
        bob.close()
