"""The server flags are declared once (rockmq/cli/servers.py): each names a Settings field that the
flag overrides, with the field's type and default; `serve` maps every one of them, `namesrv` the
cluster's."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from rockmq.cli import parser
from rockmq.cli.servers import CLUSTER, LISTENER, SERVE, add_flags, overrides
from rockmq.config import Settings, load_settings

FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
FLAGS = SERVE + LISTENER + CLUSTER


def test_every_setting_flag_names_a_field_once():
    names = [f.name for f in FLAGS if f.setting]
    assert len(names) == len(set(names))
    assert set(names) <= set(FIELDS)
    assert {f.name for f in FLAGS if not f.setting} == {"config", "ready_file"}


def test_help_shows_the_fields_defaults():
    serve = argparse.ArgumentParser()
    add_flags(serve, SERVE, LISTENER, CLUSTER)
    helps = {a.dest: a.help or "" for a in serve._actions}
    assert "{" not in "".join(helps.values())
    assert "(default 8081;" in helps["port"] and f"({Settings.max_attempts})" in helps["max_attempts"]
    assert helps["stream_send_timeout_s"].endswith("(default 30)")  # a float default as 30, not 30.0


def test_serve_overrides_every_flag_given():
    args = parser().parse_args(["serve", "--port", "0", "--workers", "auto", "--no-auto-create-topics", "--auth",
                                "--stream-send-timeout", "2.5", "--audit-format", "json", "--config", "x.toml"])
    given = {k: v for k, v in overrides(args, SERVE, LISTENER, CLUSTER).items() if v is not None}
    assert given == {"port": 0, "workers": "auto", "auto_create_topics": False, "auth_enabled": True,
                     "stream_send_timeout_s": 2.5, "audit_format": "json"}
    settings = load_settings(overrides=given | {"auth_enabled": False}, environ={})
    assert (settings.port, settings.workers, settings.stream_send_timeout_s) == (0, 0, 2.5)


def test_namesrv_resolves_only_the_clusters_flags():
    args = parser().parse_args(["namesrv", "--tls-cert", "c", "--tls-key", "k", "--max-connections", "5"])
    assert set(overrides(args, CLUSTER)) == {"inner_access_key", "inner_secret_key", "max_connections",
                                             "idle_connection_timeout_s", "http_port", "audit_format"}
    assert (args.tls_cert, args.max_connections, args.port) == ("c", 5, 9876)


@pytest.mark.parametrize("flag", [f for f in FLAGS if f.setting and FIELDS[f.name].type != "bool"], ids=lambda f: f.flag)
def test_a_flag_parses_as_its_field(flag):
    kind = {"int": int, "float": float, "str": str}[str(FIELDS[flag.name].type)]
    value = flag.choices[-1] if flag.choices else {int: "7", float: "1.5", str: "x"}[kind]
    parsed = getattr(parser().parse_args(["serve", flag.flag, value]), flag.name)
    assert type(parsed) is (str if flag.text else kind)
