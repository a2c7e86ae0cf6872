"""Settings layering and the pure rules of the send path."""

import dataclasses

import pytest

from rockmq.broker.validate import delivery_ms, message_type
from rockmq.config import SECRET_SETTINGS, ConfigError, Settings, coordinator_endpoints, load_settings
from rockmq.protocol import pb
from rockmq.protocol.message_id import new_message_id


def test_layers_defaults_file_env_flags(tmp_path):
    f = tmp_path / "rockmq.toml"
    f.write_text('port = 9000\nflush = "async"\ndata_dir = "/from/file"\n')
    s = load_settings(f, {"data_dir": "/from/flag", "host": None}, {"ROCKMQ_PORT": "9100", "ROCKMQ_MAX_ATTEMPTS": "4"})
    assert (s.port, s.flush, s.data_dir, s.max_attempts, s.host) == (9100, "async", "/from/flag", 4, "127.0.0.1")


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="flush"):
        load_settings(None, {"flush": "sometimes"}, {})
    with pytest.raises(ConfigError, match="expected int"):
        load_settings(None, None, {"ROCKMQ_PORT": "eighty"})
    f = tmp_path / "x.toml"
    f.write_text("colour = 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(f, None, {})


def test_a_replica_of_a_broker_name_needs_a_name_server():
    with pytest.raises(ConfigError, match="'broker-a' is a broker name"):
        Settings(replica_of="broker-a")
    Settings(replica_of="broker-a", namesrv="127.0.0.1:9876")
    Settings(replica_of="127.0.0.1:8081")


def test_booleans_from_environment():
    assert load_settings(None, None, {"ROCKMQ_AUTO_CREATE_TOPICS": "false"}).auto_create_topics is False


def test_delivery_timestamp_reads_seconds_and_the_clients_milliseconds():
    ts = pb.SystemProperties().delivery_timestamp
    ts.seconds, ts.nanos = 1_700_000_000, 250_000_000
    assert delivery_ms(ts) == 1_700_000_000_250
    ts.seconds, ts.nanos = 1_700_000_000_123, 0  # rocketmq-python-client 5.1.x puts ms here
    assert delivery_ms(ts) == 1_700_000_000_123


def test_message_type_inference():
    assert message_type(pb.MESSAGE_TYPE_UNSPECIFIED, False, False) == "NORMAL"
    assert message_type(pb.MESSAGE_TYPE_UNSPECIFIED, True, False) == "FIFO"
    assert message_type(pb.MESSAGE_TYPE_UNSPECIFIED, False, True) == "DELAY"
    assert message_type(pb.TRANSACTION, True, False) == "TRANSACTION"


def test_message_ids_are_unique_and_v2_shaped():
    ids = {new_message_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(len(i) == 34 and i.startswith("01") for i in ids)


@pytest.mark.parametrize("name, value", [("dedup_window_s", "0"), ("auto_renew_invisible_ms", "5"),
                                         ("max_concurrent_rpcs", "0"), ("client_silence_s", "0"), ("revive_batch", "0"),
                                         ("max_reply_bytes", str(63 * 1024 * 1024)), ("retry_ladder_s", "1,0"),
                                         ("max_connections", "-1"), ("idle_connection_timeout_s", "0"),
                                         ("connection_handshake_timeout_s", "0"),
                                         # not a number, infinite, or more milliseconds than gRPC's int holds: a
                                         # traceback at start before (idle_connection_timeout_s), or taken as given
                                         ("idle_connection_timeout_s", "nan"), ("idle_connection_timeout_s", "inf"),
                                         ("connection_handshake_timeout_s", "1e300"), ("stream_send_timeout_s", "nan"),
                                         ("retention_check_s", "nan"), ("retry_ladder_s", "1,nan"),
                                         ("drain_timeout_s", "0"), ("drain_timeout_s", "inf")])
def test_settings_out_of_range_are_refused(name, value):
    with pytest.raises(ConfigError, match=name):
        load_settings(None, None, {f"ROCKMQ_{name.upper()}": value})


def test_every_setting_converts_from_text_to_its_type():
    """Field types are strings under `from __future__ import annotations`: each field must still
    get its own conversion (a tuple from comma separated numbers), never a silent str()."""
    defaults = Settings()
    text = {f.name: ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
            for f in dataclasses.fields(Settings) for v in [getattr(defaults, f.name)]}
    s = load_settings(None, None, {f"ROCKMQ_{name.upper()}": value for name, value in text.items()})
    assert s == defaults
    assert load_settings(None, None, {"ROCKMQ_RETRY_LADDER_S": "0.5, 2"}).retry_ladder_s == (0.5, 2.0)
    with pytest.raises(ConfigError, match="retry_ladder_s"):
        load_settings(None, None, {"ROCKMQ_RETRY_LADDER_S": "soon"})


@pytest.mark.parametrize(("overrides", "says"), [
    ({"coordinator": "etcd://127.0.0.1:2379", "replica_of": "127.0.0.1:8081"}, "give no replica_of"),
    ({"coordinator": "etcd://127.0.0.1:2379", "coordinator_lease_s": 1}, "coordinator_lease_s must be 2 to 60"),
    ({"coordinator": "etcd://127.0.0.1:2379", "coordinator_user": "u"}, "go together"),
    ({"coordinator": "etcd://127.0.0.1:2379", "coordinator_cert": "c", "coordinator_key": "k"}, "give coordinator_ca"),
    ({"coordinator": "etcd://127.0.0.1:2379", "coordinator_cert": "c", "coordinator_ca": "ca"}, "go together"),
    ({"coordinator_ca": "ca"}, "are for coordinator"),
    ({"coordinator": "etcd://127.0.0.1:2379", "replication": "off"}, "give replication sync or async"),
    ({"coordinator": "etcd://127.0.0.1:2379", "replication": "sync", "workers": 2}, "workers above 1"),
    ({"coordinator": "etcd://a:1,b"}, "'b' is not HOST:PORT"),
])
def test_bad_coordinator_settings_are_refused(overrides, says):
    with pytest.raises(ConfigError, match=says):
        load_settings(overrides={"replication": "sync", **overrides}, environ={})


def test_a_broker_without_a_coordinator_ignores_a_coordinator_password_in_its_environment():
    """An operator's environment may carry ROCKMQ_COORDINATOR_PASSWORD for the coordinated brokers it
    also starts: a plain broker is not refused for it (a member with a coordinator still is, without a user)."""
    assert not load_settings(environ={"ROCKMQ_COORDINATOR_PASSWORD": "p"}).coordinator
    with pytest.raises(ConfigError, match="go together"):
        load_settings(overrides={"coordinator": "etcd://127.0.0.1:2379", "replication": "sync"},
                      environ={"ROCKMQ_COORDINATOR_PASSWORD": "p"})


def test_a_coordinator_url_names_its_endpoints():
    settings = load_settings(overrides={"coordinator": "etcd://10.0.0.1:2379, etcd-1.etcd:2379", "replication": "sync"},
                             environ={})
    assert coordinator_endpoints(settings.coordinator) == ("10.0.0.1:2379", "etcd-1.etcd:2379")
    assert "coordinator_password" in SECRET_SETTINGS
