"""Issue 19's "Done when": one broker run with `--auth` and TLS (`--tls-cert/--tls-key`) serves the
unmodified official Python client (`Credentials(ak, sk)`, `tls_enable=True`) and Node.js client
(`sessionCredentials`, `sslEnabled`) with credentials over TLS — each sends and receives — and refuses a
wrong secret over TLS with UNAUTHORIZED (40100). The clients trust the test CA through
GRPC_DEFAULT_SSL_ROOTS_FILE_PATH; the Python one runs in a child process (gRPC reads that variable once
per process), as in test_tls_official_clients."""

from __future__ import annotations

import json

import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_ARGS
from broker_process import AUTH_SECRET as SECRET
from test_node_auth import assert_node_refused
from test_node_smoke import run_smoke
from test_tls_official_clients import python_client, tls_broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory):
    with tls_broker(tmp_path_factory, *AUTH_ARGS) as served:
        yield served


def test_python_client_with_credentials_over_tls(secured, unique):
    broker, env = secured
    r = python_client(broker.endpoint, unique("py-auth-tls"), unique("py-auth-tls-g"), True, env, (ADMIN, SECRET))
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n" + "\n".join(broker.log)
    assert json.loads(r.stdout.splitlines()[-1]) == {"received": ["official over tls"]}


def test_python_client_with_a_wrong_secret_over_tls_is_unauthorized(secured, unique):
    broker, env = secured
    r = python_client(broker.endpoint, unique("py-auth-tls-no"), unique("py-auth-tls-no-g"), True, env, (ADMIN, "wrong"))
    assert r.returncode != 0 and "received" not in r.stdout
    assert "40100" in r.stderr, r.stderr[-2000:]
    assert "authentication-failed" in "\n".join(broker.log)


def test_node_client_with_credentials_over_tls(secured, unique):
    broker, env = secured
    run_smoke(broker, broker.endpoint, unique, "--ssl", "--access-key", ADMIN, "--secret-key", SECRET, env=env)


def test_node_client_with_a_wrong_secret_over_tls_is_unauthorized(secured, unique):
    broker, env = secured
    assert_node_refused(broker.endpoint, unique, "--ssl", "--access-key", ADMIN, "--secret-key", "wrong", env=env)
