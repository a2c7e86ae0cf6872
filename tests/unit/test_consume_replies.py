"""Hand-encoded receive, pull and ack replies are byte for byte what protobuf would serialize."""

from hypothesis import given
from hypothesis import strategies as st

from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.ack_request import read
from rockmq.protocol.consume_replies import ack_message_reply, ack_reply, messages_reply, received_reply
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.protocol.wire import delimited

OK = pb.Status(code=pb.OK, message="OK")
statuses = st.one_of(st.none(), st.builds(pb.Status, code=st.sampled_from([pb.INVALID_RECEIPT_HANDLE, pb.BAD_REQUEST]),
                                          message=st.text(max_size=40)))
messages = st.lists(st.binary(max_size=300), max_size=20)


@given(messages, st.sampled_from([OK, pb.Status(code=pb.MESSAGE_NOT_FOUND, message="no new message")]))
def test_receive_reply(found, status):
    assert messages_reply(status, found) == batch.ReceiveResponse(status=status, messages=found).SerializeToString()


@given(messages)
def test_received_reply_of_framed_messages(found):
    framed = [delimited(ReceivedMessageFields.MESSAGE, m) for m in found]
    assert received_reply(OK, framed) == batch.ReceiveResponse(status=OK, messages=found).SerializeToString()


@given(messages, st.integers(0, 2**63 - 1))
def test_pull_reply(found, next_offset):
    expected = batch.PullResponse(status=OK, messages=found, next_offset=next_offset).SerializeToString()
    assert messages_reply(OK, found, next_offset) == expected


@given(st.lists(statuses, max_size=20))
def test_ack_reply(entries):
    expected = batch.AckResponse(status=OK, entries=[OK if e is None else e for e in entries]).SerializeToString()
    assert ack_reply(OK, entries) == expected


@given(st.lists(st.tuples(st.text(max_size=30), st.text(max_size=60), statuses), max_size=20))
def test_ack_message_reply(entries):
    """The reply to an AckMessageRequest read from its bytes echoes each entry's id and handle."""
    request = rpc.AckMessageRequest(group=pb.Resource(name="g"), topic=pb.Resource(name="t"), entries=[
        rpc.AckMessageEntry(message_id=m, receipt_handle=h) for m, h, _ in entries]).SerializeToString()
    expected = rpc.AckMessageResponse(status=OK, entries=[
        rpc.AckMessageResultEntry(message_id=m, receipt_handle=h, status=OK if s is None else s) for m, h, s in entries])
    assert ack_message_reply(OK, read(request).entries, [s for _, _, s in entries]) == expected.SerializeToString()


bodies = st.lists(st.tuples(st.binary(max_size=200), st.text(max_size=20)), max_size=20)


@given(bodies, st.integers(0, 2**63 - 1))
def test_the_client_reads_receive_and_pull_replies_as_received_batch(found, next_offset):
    """ReceivedBatch (how rockmq's client parses Receive and Pull replies) reads what the broker writes."""
    sent = [pb.Message(topic=pb.Resource(name="t"), body=body, system_properties=pb.SystemProperties(receipt_handle=handle))
            for body, handle in found]
    serialized = [m.SerializeToString() for m in sent]
    pulled = batch.ReceivedBatch.FromString(messages_reply(OK, serialized, next_offset))
    framed = [delimited(ReceivedMessageFields.MESSAGE, m) for m in serialized]
    received = batch.ReceivedBatch.FromString(received_reply(OK, framed))
    assert list(pulled.messages) == list(received.messages) == sent
    assert (pulled.status, pulled.next_offset, received.status) == (OK, next_offset, OK)
