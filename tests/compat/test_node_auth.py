"""The unmodified official Node.js client (1.0.8) against `rockmq serve --auth`: `sessionCredentials`
with the right secret sends and receives (the whole smoke run: normal and delayed messages); a
wrong secret, an unknown user and no credentials are refused with UNAUTHORIZED (40100)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_SECRET as SECRET
from test_node_smoke import CLIENT_PKG, NODE_DIR, SCRIPT, run_smoke


def test_node_client_with_credentials(auth_broker, unique):
    run_smoke(auth_broker, auth_broker.endpoint, unique, "--access-key", ADMIN, "--secret-key", SECRET)


@pytest.mark.parametrize("credentials", [("--access-key", ADMIN, "--secret-key", "wrong"),
                                         ("--access-key", "nobody", "--secret-key", SECRET), ()],
                         ids=["wrong-secret", "unknown-user", "no-credentials"])
def test_node_client_refused(auth_broker, unique, credentials):
    assert_node_refused(auth_broker.endpoint, unique, *credentials)


def assert_node_refused(endpoint: str, unique, *flags: str, env: dict[str, str] | None = None) -> None:
    """smoke.mjs with `flags` (its credentials, --ssl) fails with UNAUTHORIZED (40100)."""
    node = shutil.which("node")
    assert node and CLIENT_PKG.exists(), f"needs node and `npm ci` in {NODE_DIR}"
    proc = subprocess.run([node, str(SCRIPT), "--endpoint", endpoint, "--topic", unique("node-auth"),
                           "--group", unique("node-auth-g"), "--timeout", "40", *flags],
                          cwd=NODE_DIR, capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
    assert proc.returncode != 0
    assert "UnauthorizedException" in proc.stdout and "code=40100" in proc.stdout, proc.stdout[-2000:]
