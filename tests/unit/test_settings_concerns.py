"""Settings grouped by concern (config.CONCERNS): a TOML file may put each setting in its concern's
table; top-level keys, `ROCKMQ_*` names and flags work as before."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from rockmq.config import CONCERNS, ConfigError, Settings, load_settings, to_environ


def test_every_setting_has_exactly_one_concern():
    named = Counter(name for names in CONCERNS.values() for name in names)
    assert {n for n, c in named.items() if c > 1} == set()
    assert set(named) == {f.name for f in dataclasses.fields(Settings)}


GROUPED = """
[storage]
data_dir = "/var/lib/rockmq"
store_memory_mib = 256
[network]
port = 9001
tls-ca = "ca.pem"
[auth]
auth_enabled = true
admin_user = "root"
admin_secret = "s"
[cluster]
broker_name = "b7"
[replication]
replication_timeout_s = 1.5
[messages]
retry_ladder_s = [1, 5]
[limits]
max_topics = 10
"""
FLAT = """
data_dir = "/var/lib/rockmq"
store_memory_mib = 256
port = 9001
tls-ca = "ca.pem"
auth_enabled = true
admin_user = "root"
admin_secret = "s"
broker_name = "b7"
replication_timeout_s = 1.5
retry_ladder_s = [1, 5]
max_topics = 10
"""


def _load(tmp_path, text, environ=None, overrides=None):
    path = tmp_path / "rockmq.toml"
    path.write_text(text)
    return load_settings(path, overrides, environ or {})


def test_tables_and_top_level_keys_load_alike(tmp_path):
    grouped, flat = _load(tmp_path, GROUPED), _load(tmp_path, FLAT)
    assert grouped == flat
    assert (grouped.data_dir, grouped.port, grouped.tls_ca, grouped.max_topics, grouped.retry_ladder_s) == (
        "/var/lib/rockmq", 9001, "ca.pem", 10, (1.0, 5.0))


def test_environment_and_flags_still_win_over_the_file(tmp_path):
    s = _load(tmp_path, GROUPED, environ={"ROCKMQ_PORT": "9002", "ROCKMQ_MAX_TOPICS": "11"},
              overrides={"max_topics": 12})
    assert (s.port, s.max_topics) == (9002, 12)
    assert set(to_environ(s)) == {f"ROCKMQ_{f.name.upper()}" for f in dataclasses.fields(Settings)}


@pytest.mark.parametrize("text, says", [
    ("[limits]\nport = 1\n", "it belongs in [network]"),
    ("[disk]\ndata_dir = 'x'\n", "unknown table [disk]"),
    ("[storage]\nno_such = 1\n", "unknown setting 'no_such'"),
    ("port = 1\n[network]\nport = 2\n", "given twice"),
])
def test_a_misplaced_setting_is_refused_saying_where_it_belongs(tmp_path, text, says):
    with pytest.raises(ConfigError, match=says.replace("[", r"\[").replace("]", r"\]")):
        _load(tmp_path, text)
