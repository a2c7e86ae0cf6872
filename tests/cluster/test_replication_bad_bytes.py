"""Follow (Replication) frames whose bytes do not parse end the stream with INVALID_ARGUMENT and one
readable line, as every unary method answers them (issue 20 §1.4): they used to reach the handler as
UNPARSED, whose refusal escaped it, so the follower got UNKNOWN and the broker logged a traceback."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess

from rockmq.protocol import replication

GARBAGE = b"\x0a\xff\xff\xff\xff\x0f"  # field 1 as a length running past the end
FOLLOW = "/rockmq.replication.v1.Replication/Follow"


@pytest.fixture(scope="module")
def primary(tmp_path_factory: pytest.TempPathFactory):
    b = BrokerProcess(Path(tmp_path_factory.mktemp("primary")), "--replication", "async").start()
    yield b
    b.stop()


@pytest.mark.parametrize("frames", [[GARBAGE], [replication.FollowerState(applied_seq=0).SerializeToString(), GARBAGE]],
                         ids=["first", "later"])
def test_a_follower_state_that_does_not_parse_is_invalid_argument(primary: BrokerProcess, frames: list[bytes]):
    with grpc.insecure_channel(primary.endpoint) as channel:
        call = channel.stream_stream(FOLLOW)(iter(frames), timeout=10)
        with pytest.raises(grpc.RpcError) as err:
            list(call)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value
    assert err.value.details() == "a FollowerState's bytes do not parse"
    assert primary.tracebacks == 0, list(primary.log)
