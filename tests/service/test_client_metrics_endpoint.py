"""client_metrics_endpoint (issue 28 §1): the Settings reply tells official clients to export their
own metrics there (`metric.on` and the endpoint, as Apache's proxy does); unset, metrics stay off."""

from __future__ import annotations

import pytest

from rockmq.broker.clients import Session
from rockmq.config import ConfigError, Settings
from rockmq.protocol import pb


def _reply(harness) -> pb.Settings:
    given = pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name="metered")]))
    return harness.call(lambda: harness.services.clients.complete_settings(Session("c1"), given))


@pytest.mark.broker_settings(client_metrics_endpoint="127.0.0.1:4317")
def test_the_settings_reply_names_the_endpoint(harness):
    metric = _reply(harness).metric
    assert metric.on
    assert [(a.host, a.port) for a in metric.endpoints.addresses] == [("127.0.0.1", 4317)]
    assert metric.endpoints.scheme == pb.IPv4


def test_without_it_client_metrics_stay_off(harness):
    metric = _reply(harness).metric
    assert not metric.on and not metric.HasField("endpoints")


@pytest.mark.parametrize("bad", ["collector", "host:", ":4317", "host:99999"])
def test_a_bad_endpoint_is_refused(bad):
    with pytest.raises(ConfigError, match="client_metrics_endpoint must be HOST:PORT"):
        Settings(client_metrics_endpoint=bad)
