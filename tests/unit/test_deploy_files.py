"""The deployment files (Dockerfile, deploy/kubernetes/) keep the rules that neither hadolint nor
kubernetes-validate (both run by .ci/run) check: the image runs as a non-root user with its data in a
volume and the HTTP port for probes; the broker's grace period is above its drain timeout; probes are
on /readyz and /healthz; every ROCKMQ_* variable is a setting; no secret value is in a manifest."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rockmq.config import Settings

ROOT = Path(__file__).resolve().parents[2]
SECRET_SETTINGS = {f"ROCKMQ_{f.name.upper()}" for f in dataclasses.fields(Settings) if not f.repr} | {
    "ROCKMQ_ADMIN_USER", "ROCKMQ_INNER_ACCESS_KEY"}


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (KEYWORD, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = (line.strip() for line in text.splitlines())
    return [(word.upper(), rest.strip()) for word, _, rest in (line.partition(" ") for line in lines if line and
                                                               not line.startswith("#"))]


def _final_stage() -> list[tuple[str, str]]:
    steps = _instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def test_the_image_is_built_in_two_stages_and_the_final_one_has_no_compiler() -> None:
    assert [word for word, _ in _instructions()].count("FROM") == 2
    final = _final_stage()
    assert any(word == "COPY" and "--from=builder" in args for word, args in final)
    assert not any("gcc" in args for _, args in final)


def test_the_image_runs_as_a_non_root_user_with_its_data_in_a_volume() -> None:
    final = dict(_final_stage())  # the last of each instruction
    user = final["USER"].split(":")[0]
    assert user not in ("root", "0")
    assert "ROCKMQ_DATA_DIR=/var/lib/rockmq" in final["ENV"]
    assert "/var/lib/rockmq" in final["VOLUME"]


def test_the_image_exposes_grpc_and_serves_probes_on_its_http_port() -> None:
    final = dict(_final_stage())
    assert {"8081", "8080"} <= set(final["EXPOSE"].split())
    command = " ".join(json.loads(final["CMD"]))  # a JSON array, as hadolint asks (DL3025)
    assert "--http-port 8080" in command and "--host 0.0.0.0" in command


def _manifests() -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml")  # PyYAML comes with kubernetes-validate (the dev extras)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    built = subprocess.run([kubectl, "kustomize", str(ROOT / "deploy" / "kubernetes")], capture_output=True, text=True,
                           timeout=60, check=True).stdout
    return [doc for doc in yaml.safe_load_all(built) if doc]


def _containers(kind: str) -> list[dict[str, Any]]:
    return [c for doc in _manifests() if doc["kind"] == kind for c in doc["spec"]["template"]["spec"]["containers"]]


def _flag(container: dict[str, Any], name: str) -> str:
    args = container["args"]
    return str(args[args.index(name) + 1])


def test_the_broker_gets_longer_than_its_drain_to_stop() -> None:
    (broker,) = [doc for doc in _manifests() if doc["kind"] == "StatefulSet"]
    pod = broker["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["terminationGracePeriodSeconds"] > float(_flag(container, "--drain-timeout"))
    assert broker["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] in {m["name"] for m in container["volumeMounts"]}


def test_probes_ask_the_http_port_for_readiness_and_liveness() -> None:
    for container in _containers("StatefulSet") + _containers("Deployment"):
        http = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
        assert _flag(container, "--http-port") == str(http)
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_a_pod_disruption_budget_covers_the_brokers() -> None:
    docs = _manifests()
    (budget,) = [doc for doc in docs if doc["kind"] == "PodDisruptionBudget"]
    (broker,) = [doc for doc in docs if doc["kind"] == "StatefulSet"]
    assert budget["spec"]["selector"] == broker["spec"]["selector"]


def test_settings_come_as_rockmq_variables_and_credentials_from_the_secret_alone() -> None:
    assert not [doc for doc in _manifests() if doc["kind"] == "Secret"]
    fields = {f"ROCKMQ_{f.name.upper()}" for f in dataclasses.fields(Settings)}
    for container in _containers("StatefulSet") + _containers("Deployment"):
        for env in container["env"]:
            if env["name"].startswith("ROCKMQ_"):
                assert env["name"] in fields, env
            if env["name"] in SECRET_SETTINGS:
                assert "value" not in env and env["valueFrom"]["secretKeyRef"]["name"] == "rockmq-credentials", env


def test_the_readme_creates_every_key_the_manifests_read() -> None:
    keys = {env["valueFrom"]["secretKeyRef"]["key"] for c in _containers("StatefulSet") + _containers("Deployment")
            for env in c["env"] if "secretKeyRef" in env.get("valueFrom", {})}
    readme = (ROOT / "deploy" / "kubernetes" / "README.md").read_text()
    command = next(block for block in readme.split("\n\n") if "kubectl create secret generic rockmq-credentials" in block)
    literals = {arg.split("=", 1)[1].split("=")[0] for arg in shlex.split(command.replace("\\\n", " "))
                if arg.startswith("--from-literal=")}
    assert literals == keys
