"""`rockmq broker config` against a real broker: the effective settings, secrets never shown."""

from __future__ import annotations

import json

import pytest
from broker_process import AUTH_ADMIN, AUTH_ARGS, AUTH_SECRET, BrokerProcess
from test_cli import assert_one_line_error, ok, table

from rockmq.config import SECRET_SETTINGS, Settings

INNER_KEY, INNER_SECRET = "inner-node", "inner-s3cret-value"


@pytest.fixture(scope="module")
def secret_broker(tmp_path_factory: pytest.TempPathFactory):
    """A broker with every kind of secret set: the admin's, and the cluster's inner credentials."""
    b = BrokerProcess(tmp_path_factory.mktemp("config"), *AUTH_ARGS, "--inner-access-key", INNER_KEY,
                      "--inner-secret-key", INNER_SECRET, "--max-attempts", "7").start()
    yield b
    b.stop()


def as_admin(*args: str) -> tuple[str, ...]:
    return (*args, "--access-key", AUTH_ADMIN, "--secret-key", AUTH_SECRET)


def test_every_setting_shown_and_secrets_hidden(secret_broker):
    out = ok(secret_broker.cli(*as_admin("broker", "config", "--json")))
    for secret in (AUTH_SECRET, INNER_KEY, INNER_SECRET):
        assert secret not in out
    entries = {e["name"]: e for e in json.loads(out)["settings"]}
    assert set(entries) == set(Settings.__dataclass_fields__)
    assert entries["max_attempts"]["value"] == "7" and entries["auth_enabled"]["value"] == "True"
    assert entries["admin_user"]["value"] == AUTH_ADMIN
    assert SECRET_SETTINGS == {"admin_secret", "inner_access_key", "inner_secret_key", "coordinator_password"}
    for name in SECRET_SETTINGS - {"coordinator_password"}:  # those this broker sets
        assert entries[name] == {"name": name, "value": "<hidden>", "secret": True}
    assert entries["coordinator_password"] == {"name": "coordinator_password", "value": "", "secret": True}
    rows = {r[0]: r[1:] for r in table(ok(secret_broker.cli(*as_admin("broker", "config"))), "SETTING")}
    assert rows["admin_secret"] == ["<hidden>"] and rows["max_attempts"] == ["7"]


def test_only_super_users(secret_broker):
    assert_one_line_error(secret_broker.cli("broker", "config"), 1)


def test_plain_broker(broker):
    rows = {r[0]: r[1:] for r in table(ok(broker.cli("broker", "config")), "SETTING")}
    assert rows["max_attempts"] == ["3"] and rows["admin_secret"] == []  # unset: nothing to hide
