"""The deploy/ examples cannot run here (no Docker, no Kubernetes); what can be checked is that they say what
the tested server does: their configs load with this version's models (every key known), the variables they
use are provided, replicas share one config and name themselves, readiness is /health."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from server.runtime.loader import load_app_settings, load_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ENV = {
    "IR_CLIENT_KEY": "c",
    "IR_ADMIN_KEY": "a",
    "IR_PG_URL": "postgresql+psycopg://router:router@postgres:5432/router",
    "IR_REDIS_URL": "redis://redis:6379/0",
    "IR_REPLICA_NAME": "router-1",
}


def variables(text: str) -> set[str]:
    return set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))


@pytest.fixture
def env(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def test_compose_example(tmp_path, env):
    compose = yaml.safe_load((DEPLOY / "compose" / "docker-compose.yml").read_text())
    text = (DEPLOY / "compose" / "config" / "config.yaml").read_text()
    (tmp_path / "config").mkdir()
    shutil.copy(DEPLOY / "compose" / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    app = load_app_settings(tmp_path / "config")
    assert app.cluster.enabled and app.cluster.redis_url == ENV["IR_REDIS_URL"] and app.cluster.name() == "router-1"
    assert app.sessions.backend == "redis" and app.result_cache.backend == "redis"
    assert app.rerank_cache.backend == "redis" and app.embedding.cache.shared is not None
    assert app.stats.url == ENV["IR_PG_URL"] and app.auth.enabled

    routers = {name: s for name, s in compose["services"].items() if name.startswith("router-")}
    assert len(routers) == 3
    for name, service in routers.items():
        environment = service["environment"]
        assert environment["IR_REPLICA_NAME"] == name
        assert variables(text) <= set(environment)  # every ${VAR} of the config is set
        assert "/health" in " ".join(service["healthcheck"]["test"])
    upstreams = re.findall(r"server (router-\d):8080", (DEPLOY / "compose" / "nginx.conf").read_text())
    assert set(upstreams) == set(routers)
    assert {"redis", "postgres", "lb"} <= set(compose["services"])


def test_kubernetes_example(tmp_path, env):
    docs = {
        d["kind"] + "/" + d["metadata"]["name"]: d
        for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "intent-router.yaml").read_text())
    }
    config = docs["ConfigMap/intent-router-config"]
    deployment = docs["Deployment/intent-router"]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v["configMap"] for v in pod["volumes"]}

    # lay the ConfigMaps out as the pod sees them (under /app), with the demo database of the image
    root = tmp_path / "app"
    for item in volumes["config"]["items"]:
        target = root / mounts["config"].removeprefix("/app/") / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(config["data"][item["key"]])
    for key, text in docs["ConfigMap/intent-router-templates"]["data"].items():
        target = root / mounts["templates"].removeprefix("/app/") / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    loaded = load_config(root / "config")
    assert [a.name for a in loaded.adapters] == ["hr"] and loaded.templates["hr"][0].id == "salary_by_department"
    assert loaded.app.cluster.enabled and loaded.app.cluster.name() == "router-1"
    shared = loaded.app.embedding.cache.shared
    assert shared is not None and shared.url == ENV["IR_REDIS_URL"] and loaded.app.rerank_cache.backend == "redis"

    provided = set(docs["Secret/intent-router"]["stringData"]) | {e["name"] for e in container["env"]}
    assert variables(config["data"]["config.yaml"]) <= provided
    assert deployment["spec"]["replicas"] >= 2
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert docs["Service/intent-router"]["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


PYPROJECT_VERSION = re.search(r'^version = "([^"]+)"', (DEPLOY.parent / "pyproject.toml").read_text(), re.M)


def test_the_dockerfile_says_what_it_bakes_in():
    """It copies the demo config/ into the image: its header must say so (it said "NOT baked in")."""
    text = (DEPLOY / "Dockerfile").read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert "COPY config ./config" in text
    assert "NOT baked in" not in header and "demo configuration" in header and "/app/config" in header


def test_kubernetes_replicas_request_two_cores_and_run_a_pinned_image():
    docs = {
        d["kind"] + "/" + d["metadata"]["name"]: d
        for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "intent-router.yaml").read_text())
    }
    container = docs["Deployment/intent-router"]["spec"]["template"]["spec"]["containers"][0]
    requests = container["resources"]["requests"]
    cpu = str(requests["cpu"])
    assert (float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)) >= 2  # docs/deployment.md "Sizing": two cores
    assert requests["memory"] and container["resources"]["limits"]["memory"]
    assert "cpu" not in container["resources"]["limits"]  # throttling stalls every question in flight
    name, _, tag = container["image"].rpartition(":")
    assert name and tag not in ("", "latest") and container["imagePullPolicy"] == "IfNotPresent"
    assert PYPROJECT_VERSION is not None and tag == PYPROJECT_VERSION.group(1)
    compose = yaml.safe_load((DEPLOY / "compose" / "docker-compose.yml").read_text())
    assert compose["x-router"]["image"] == container["image"]  # both examples run the same build


@pytest.mark.parametrize(
    "path", ["compose/config/config.yaml", "kubernetes/intent-router.yaml"], ids=["compose", "kubernetes"]
)
def test_store_queries_off_says_what_it_costs(path):
    """`store_queries: false` empties the dashboard's Unmatched questions panel: each deploy config says so."""
    text = (DEPLOY / path).read_text()
    at = text.index("store_queries: false")
    nearby = text[text.rfind("\n", 0, max(0, at - 400)) : text.find("\n", at + 200)]
    assert "Unmatched questions" in nearby, path
