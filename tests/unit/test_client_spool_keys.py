"""The producer's retry spool without a broker: key and value encodings, and the resend schedule
driven by a fake resend (on a real RocksDB in a temporary directory)."""

from __future__ import annotations

import asyncio
import uuid

from rockmq.client import Message
from rockmq.client.errors import ConnectionFailed, IllegalArgument
from rockmq.client.spool import Spool, decode_entry, encode_entry, parse_spool_key, spool_key
from rockmq.protocol import pb, rpc


def _request(*ids: str, topic: str = "t") -> rpc.SendMessageRequest:
    return rpc.SendMessageRequest(messages=[Message(topic, f"body {i}".encode(), tag="x").to_pb(i, "h", 1000)
                                            for i in ids])


def test_keys_sort_by_due_time_and_round_trip():
    a, b = uuid.uuid4().bytes, uuid.uuid4().bytes
    assert spool_key(999, b"\xff" * 16) < spool_key(1000, b"\x00" * 16) < spool_key(2**40, a)
    assert parse_spool_key(spool_key(123_456, b)) == (123_456, b)


def test_entry_keeps_message_ids_attempts_and_error():
    attempts, error, request = decode_entry(encode_entry(3, "cannot reach b1: ünavailable", _request("m1", "m2")))
    assert attempts == 3 and error == "cannot reach b1: ünavailable"
    assert [m.system_properties.message_id for m in request.messages] == ["m1", "m2"]
    back = Message.from_pb(request.messages[0])
    assert (back.topic, back.body, back.tag) == ("t", b"body m1", "x")


def test_failures_follow_the_schedule_then_succeed(tmp_path):
    calls: list[float] = []

    async def resend(request: rpc.SendMessageRequest) -> None:
        calls.append(asyncio.get_running_loop().time())
        if len(calls) < 3:
            raise ConnectionFailed("down")

    async def scenario():
        spool = Spool(tmp_path, resend, schedule_s=(0.05, 0.1, 0.2))
        assert await spool.add(_request("m1"), ConnectionFailed("down"))
        assert await spool.drain(5) == 0
        assert len(calls) == 3 and calls[2] - calls[1] >= 0.09  # the second step of the schedule
        assert len(spool) == 0 and spool.dead() == []
        await spool.close()

    asyncio.run(scenario())


def test_out_of_attempts_or_not_retriable_goes_dead_and_is_kept(tmp_path):
    dead: list[tuple[Message, Exception]] = []

    async def resend(request: rpc.SendMessageRequest) -> None:
        if request.messages[0].topic.name == "gone":
            raise IllegalArgument("no such topic", code=pb.BAD_REQUEST)
        raise ConnectionFailed("still down")

    async def scenario():
        spool = Spool(tmp_path, resend, schedule_s=(0.05, 0.05), max_entries=3, on_dead=lambda m, e: dead.append((m, e)))
        assert await spool.add(_request("a1", "a2"), ConnectionFailed("down"))
        assert await spool.add(_request("b1", topic="gone"), ConnectionFailed("down"))
        assert await spool.add(_request("c1"), ConnectionFailed("down"))
        assert not await spool.add(_request("d1"), ConnectionFailed("down")), "beyond max_entries"
        assert await spool.drain(5) == 0
        entries = spool.dead()
        assert sorted(e.message_ids for e in entries) == [("a1", "a2"), ("b1",), ("c1",)]
        gone = next(e for e in entries if e.topic == "gone")
        assert gone.attempts == 1 and "no such topic" in gone.error
        assert all(e.attempts == 2 and "still down" in e.error for e in entries if e.topic == "t")
        assert sorted(m.body for m, _ in dead) == [b"body a1", b"body a2", b"body b1", b"body c1"]
        spool.forget_dead(gone.id)
        assert len(spool) == 2
        await spool.close()

    asyncio.run(scenario())


def test_a_new_spool_replays_what_an_old_one_left_at_once(tmp_path):
    sent: list[str] = []

    async def fail(request: rpc.SendMessageRequest) -> None:
        raise ConnectionFailed("down")

    async def ok(request: rpc.SendMessageRequest) -> None:
        sent.extend(m.system_properties.message_id for m in request.messages)

    async def scenario():
        old = Spool(tmp_path, fail, schedule_s=(600,))
        for i in range(100):
            assert await old.add(_request(f"m{i}"), ConnectionFailed("down"))
        await old.close()
        new = Spool(tmp_path, ok, schedule_s=(600,))
        assert new.pending == 100
        new.start()
        assert await new.drain(5) == 0, "not replayed at start"
        assert sorted(sent) == sorted(f"m{i}" for i in range(100))
        await new.close()

    asyncio.run(scenario())
