"""`rockmq user create|update|delete|list` against `rockmq serve --auth`, and credentials on every
CLI command (--access-key/--secret-key or ROCKMQ_ACCESS_KEY/ROCKMQ_SECRET_KEY): one line and a
non-zero exit for every refusal, never a secret in an output or the broker's log."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_SECRET as SECRET

AS_ADMIN = ("--access-key", ADMIN, "--secret-key", SECRET)



def rockmq(broker, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("ROCKMQ_ACCESS_KEY", "ROCKMQ_SECRET_KEY")}
    return subprocess.run([sys.executable, "-m", "rockmq", *args, "--endpoint", broker.endpoint], capture_output=True,
                          text=True, timeout=60, env={**clean, **(env or {})})


def one_line_refusal(r: subprocess.CompletedProcess[str], says: str, code: int = 1) -> None:
    assert (r.returncode, r.stdout) == (code, ""), r
    assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_users_lifecycle(auth_broker, unique):
    name = unique("alice")
    assert rockmq(auth_broker, "user", "create", name, "--secret", "alice-pw", *AS_ADMIN).stdout == f"created user {name}\n"
    one_line_refusal(rockmq(auth_broker, "user", "create", name, "--secret", "x", *AS_ADMIN), "exists")
    listed = rockmq(auth_broker, "user", "list", *AS_ADMIN).stdout
    assert f"{name}  normal  enabled" in listed and "alice-pw" not in listed and SECRET not in listed
    as_alice = ("--access-key", name, "--secret-key", "alice-pw")
    one_line_refusal(rockmq(auth_broker, "topic", "list", *as_alice), f"user {name!r} may not List on Topic:*")
    assert rockmq(auth_broker, "acl", "grant", name, "--resource", "Topic:*", "--actions", "List", *AS_ADMIN).returncode == 0
    assert rockmq(auth_broker, "topic", "list", *as_alice).returncode == 0
    one_line_refusal(rockmq(auth_broker, "user", "list", *as_alice), "needs a super user")
    assert rockmq(auth_broker, "user", "update", name, "--disable", *AS_ADMIN).returncode == 0
    one_line_refusal(rockmq(auth_broker, "topic", "list", *as_alice), "authentication failed")  # why: the audit log only
    assert rockmq(auth_broker, "user", "update", name, "--enable", "--secret", "new-pw", *AS_ADMIN).returncode == 0
    one_line_refusal(rockmq(auth_broker, "topic", "list", *as_alice), "authentication failed")
    assert rockmq(auth_broker, "topic", "list", "--access-key", name, "--secret-key", "new-pw").returncode == 0
    assert rockmq(auth_broker, "user", "delete", name, *AS_ADMIN).stdout == f"deleted user {name}\n"
    one_line_refusal(rockmq(auth_broker, "user", "delete", name, *AS_ADMIN), "no user")
    deleted = ("--access-key", name, "--secret-key", "new-pw")
    one_line_refusal(rockmq(auth_broker, "topic", "list", *deleted), "authentication failed")
    log = "\n".join(auth_broker.log)
    assert f'user-change who="{ADMIN}" from="127.0.0.1" what="create user {name}" result="ok"' in log
    assert "alice-pw" not in log and "new-pw" not in log and SECRET not in log


def test_the_last_super_user_stays(auth_broker):
    one_line_refusal(rockmq(auth_broker, "user", "delete", ADMIN, *AS_ADMIN), "last enabled super user")
    one_line_refusal(rockmq(auth_broker, "user", "update", ADMIN, "--disable", *AS_ADMIN), "last enabled super user")


def test_every_command_signs(auth_broker, unique):
    topic, group = unique("cli-auth"), unique("cli-auth-g")
    env = {"ROCKMQ_ACCESS_KEY": ADMIN, "ROCKMQ_SECRET_KEY": SECRET}
    one_line_refusal(rockmq(auth_broker, "topic", "create", topic), "no credentials")
    one_line_refusal(rockmq(auth_broker, "message", "send", topic, "x"), "UNAUTHORIZED")
    for args in (("topic", "create", topic), ("group", "create", group), ("message", "send", topic, "hello"),
                 ("topic", "describe", topic), ("group", "list"), ("timer", "stats")):
        r = rockmq(auth_broker, *args, env=env)
        assert r.returncode == 0, r
    r = rockmq(auth_broker, "message", "tail", topic, "--group", group, "--count", "1", env=env)
    assert (r.returncode, "hello" in r.stdout) == (0, True), r
    one_line_refusal(rockmq(auth_broker, "topic", "list", "--access-key", ADMIN), "give both", code=2)


def test_bench_signs(auth_broker, unique):
    args = ("bench", "--scenario", "produce-batch", "--duration", "1", "--no-ceiling", "--json", "--topic", unique("bench-auth"))
    r = rockmq(auth_broker, *args, *AS_ADMIN)
    figures = json.loads(r.stdout)["scenarios"]["produce-batch"]
    assert (r.returncode, figures["errors"]) == (0, 0) and figures["messages_per_s"] > 0, r
    refused = rockmq(auth_broker, *args)
    assert refused.returncode != 0 and "UNAUTHORIZED" in refused.stdout + refused.stderr, refused
