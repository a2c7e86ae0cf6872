"""SendMessage's hand-encoded reply is what protobuf encodes for the same results."""

import random

from rockmq.broker.api.replies import multi_status, send_reply, status
from rockmq.broker.send import SendResult
from rockmq.protocol import pb, rpc


def _protobuf_reply(results: list[SendResult]) -> bytes:
    entries = [rpc.SendResultEntry(status=status(r.code, r.message), message_id=r.message_id, offset=r.offset,
                                   transaction_id=r.transaction_id, recall_handle=r.recall_handle) for r in results]
    return rpc.SendMessageResponse(status=multi_status([e.status for e in entries]), entries=entries).SerializeToString()


def test_send_reply_is_byte_identical_to_protobuf():
    rnd = random.Random(18)
    codes = [(pb.OK, "OK"), (pb.MESSAGE_BODY_EMPTY, "message body is empty"), (pb.ILLEGAL_MESSAGE_TAG, "illegal tag 'ä|'")]
    for _ in range(300):
        results = []
        for _ in range(rnd.randint(1, 40)):
            code, message = rnd.choice(codes) if rnd.random() < 0.2 else codes[0]
            results.append(SendResult(code, message, rnd.choice(["", "ID", "Ünïcode-id", "7F" * 40]),
                                      rnd.choice([0, 1, 127, 128, 2**21, 2**40]), rnd.choice(["", "txn-1"]),
                                      rnd.choice(["", "recall-handle"])))
        assert send_reply(results) == _protobuf_reply(results)
