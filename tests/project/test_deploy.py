"""deploy/ agrees with the code: the image's entry point and probes, the compose file's replicas and
load balancer, the Kubernetes manifests' probes, ports, secrets and selectors, the lock file against
pyproject, and the migration step run for real. The image itself is built where a container engine
answers (`docker info` or `podman info`), and the test says why it is skipped elsewhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version
from paths import ROOT
from plugin_kit import make_plugin

from oz0.adapters.chat import slack, slack_settings
from oz0.adapters.cli import COMMANDS
from oz0.adapters.console.app import DEFAULT_PORT, create_app
from oz0.edge.runtime.migrate import HEAD

DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"


def k8s_documents() -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") != "Kustomization":
                found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
            for line in (raw.strip() for raw in text.splitlines()) if line and not line.startswith("#")]


def console_paths() -> set[str]:
    return {getattr(route, "path", "") for route in create_app(_NoRuntime()).routes}


class _NoRuntime:
    """Just enough runtime for create_app to list its routes."""
    store = None

    def shows_questions(self, platform: str) -> None:  # the console says it draws its jobs' questions
        return None


def test_the_console_serves_the_probe_paths_the_deploy_files_use():
    assert {"/healthz", "/readyz", "/metrics"} <= console_paths()


def test_the_dockerfile_is_multi_stage_non_root_locked_and_runs_oz0_serve():
    steps = dockerfile_instructions()
    froms = [arg for op, arg in steps if op == "FROM"]
    assert len(froms) >= 2 and froms[0].endswith(" AS build")
    user = [arg for op, arg in steps if op == "USER"]
    assert user and user[-1].split(":")[0] not in ("root", "0")
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "--require-hashes --no-deps -r /tmp/locks/requirements.lock" in runs
    assert "--require-hashes --no-deps -r /tmp/locks/build.lock" in runs
    assert dict(steps)["ENTRYPOINT"] == '["oz0"]' and dict(steps)["CMD"] == '["serve"]'
    assert "serve" in COMMANDS and "db" in COMMANDS
    health = dict(steps)["HEALTHCHECK"]
    assert "/healthz" in health and "OZ0_CONSOLE_PORT', '8470'" in health and DEFAULT_PORT == 8470
    env = dict(steps)["ENV"]
    assert "OZ0_CONSOLE_HOST=0.0.0.0" in env and f"OZ0_SLACK_PORT={slack_settings.DEFAULT_PORT}" in env
    exposed = dict(steps)["EXPOSE"].split()
    assert exposed == [str(DEFAULT_PORT), str(slack_settings.DEFAULT_PORT)]
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert {".git", ".venv", "deploy/oz0.env", "deploy/.env"} <= set(ignored)


def locked(path: Path) -> dict[str, tuple[Version, int]]:
    """name -> (pinned version, number of hashes) of a pip-compile lock file."""
    pins: dict[str, tuple[Version, int]] = {}
    current = None
    for line in path.read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if found:
            current = re.sub(r"[-_.]+", "-", found.group(1)).lower()
            pins[current] = (Version(found.group(2)), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            pins[current] = (pins[current][0], pins[current][1] + 1)
    return pins


def _extra_requirements(distribution: str, extra: str) -> list[str]:
    """The packages an extra of an installed distribution brings (its metadata's `extra == ...` lines)."""
    from importlib.metadata import requires

    out = []
    for line in requires(distribution) or ():
        req = Requirement(line)
        if req.marker is not None and req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}):
            out.append(re.sub(r"[-_.]+", "-", req.name).lower())
    return out


def test_the_lock_pins_every_dependency_of_pyproject_with_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = locked(DEPLOY / "requirements.lock")
    wanted = [Requirement(r) for r in (*project["dependencies"], *project["optional-dependencies"]["postgres"])]
    for requirement in wanted:
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in pins, f"{requirement} is not in deploy/requirements.lock: re-make it (see its header)"
        version, hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), f"{name}=={version} does not meet {requirement}"
        assert hashes >= 1, f"{name} has no hash"
        for extra in requirement.extras:  # psycopg[binary]: psycopg-binary; pydantic-ai-slim[openai]: openai
            for needed in _extra_requirements(requirement.name, extra):
                assert needed in pins, f"{name}[{extra}] needs {needed} in the lock"
    assert all(hashes >= 1 for _, hashes in pins.values())
    build = locked(DEPLOY / "build.lock")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for requirement in map(Requirement, requires):
        assert requirement.specifier.contains(build[requirement.name.lower()][0])


def test_compose_runs_two_replicas_with_stable_ids_over_postgres_behind_nginx():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    replicas = {name: s for name, s in services.items() if s.get("environment", {}).get("OZ0_REPLICA_ID")}
    assert sorted(s["environment"]["OZ0_REPLICA_ID"] for s in replicas.values()) == ["oz0-a", "oz0-b"]
    for service in replicas.values():
        env = service["environment"]
        assert env["OZ0_DATABASE_URL"].startswith("postgresql://oz0:${POSTGRES_PASSWORD") and "@postgres:5432/oz0" in env["OZ0_DATABASE_URL"]
        assert (env["OZ0_CONSOLE_HOST"], env["OZ0_CONSOLE_PORT"], env["OZ0_SLACK_PORT"]) == (
            "0.0.0.0", str(DEFAULT_PORT), str(slack_settings.DEFAULT_PORT))
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "command" not in service and "entrypoint" not in service  # the image's `oz0 serve`
    assert services["migrate"]["entrypoint"] == ["oz0-migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["postgres"]["image"].startswith("postgres:")
    lb = services["lb"]
    (mount,) = lb["volumes"]
    conf_path = DEPLOY / mount.split(":")[0]
    assert conf_path.is_file() and mount.split(":")[1] == "/etc/nginx/nginx.conf"
    conf = conf_path.read_text()
    for name in replicas:
        assert f"server {name}:{DEFAULT_PORT} " in conf and f"server {name}:{slack_settings.DEFAULT_PORT} " in conf
    assert slack.EVENTS_PATH.startswith("/slack/") and "location /slack/ {\n      proxy_pass http://oz0_slack;" in conf
    assert "location / {\n      proxy_pass http://oz0_console;" in conf
    assert "proxy_set_header Host $http_host;" in conf  # the console's same-origin check needs the Host
    listen = re.search(r"listen (\d+);", conf).group(1)
    assert lb["ports"] == [f"{listen}:{listen}"]


def test_the_statefulset_probes_ports_ids_and_secrets_agree_with_the_code():
    docs = k8s_documents()
    sts = docs[("StatefulSet", "oz0")]
    pod = sts["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["args"] == ["serve"] and "command" not in container
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"console": DEFAULT_PORT, "slack": slack_settings.DEFAULT_PORT}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "console"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "console"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "console"}
    env = {e["name"]: e for e in container["env"]}
    assert env["OZ0_REPLICA_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["OZ0_CONSOLE_PORT"]["value"] == str(DEFAULT_PORT) and env["OZ0_CONSOLE_HOST"]["value"] == "0.0.0.0"
    assert env["OZ0_SLACK_PORT"]["value"] == str(slack_settings.DEFAULT_PORT)
    secret = docs[("Secret", "oz0")]
    assert container["envFrom"] == [{"secretRef": {"name": "oz0"}}]
    assert {"OZ0_DATABASE_URL", "OZ0_CONSOLE_TOKEN", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"} <= set(secret["stringData"])
    assert len(secret["stringData"]["OZ0_CONSOLE_TOKEN"]) < 16  # a placeholder oz0 serve refuses to start with
    assert not any(name in env for name in secret["stringData"])  # secrets only from the Secret
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["spec"]["terminationGracePeriodSeconds"] > 10  # serve's own grace (SHUTDOWN_GRACE_S) fits in it
    labels = pod["metadata"]["labels"]
    assert sts["spec"]["selector"]["matchLabels"] == labels
    assert docs[("Service", sts["spec"]["serviceName"])]["spec"]["clusterIP"] == "None"
    service = docs[("Service", "oz0")]
    assert service["spec"]["selector"] == labels
    assert {p["targetPort"] for p in service["spec"]["ports"]} == {"console", "slack"}
    pdb = docs[("PodDisruptionBudget", "oz0")]
    assert pdb["spec"]["selector"]["matchLabels"] == labels and pdb["spec"]["minAvailable"] < sts["spec"]["replicas"]


def test_the_migration_job_runs_the_migrate_step_of_the_same_image_with_the_secret():
    docs = k8s_documents()
    (job,) = [d for (kind, _), d in docs.items() if kind == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (serve,) = docs[("StatefulSet", "oz0")]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["oz0-migrate"] and container["image"] == serve["image"]
    assert container["envFrom"] == serve["envFrom"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")
    assert "oz0 db upgrade" in (DEPLOY / "oz0-migrate").read_text()
    assert ("COPY", "deploy/oz0-migrate /usr/local/bin/oz0-migrate") in dockerfile_instructions()
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def test_the_migrate_step_upgrades_and_pre_installs_the_plugins_idempotently(tmp_path):
    baked = tmp_path / "baked"
    make_plugin(baked / "hello", agents={"hello": {"kind": "python", "entry": "agent:hello", "input": "text",
                                                   "output": "text"}},
                files={"agent.py": "def hello(text):\n    return 'hi ' + text\n"})
    env = {k: v for k, v in os.environ.items() if k != "OZ0_DATABASE_URL"}
    env.update(OZ0_HOME=str(tmp_path / "home"), OZ0_PREINSTALL=str(baked),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    first = subprocess.run(["sh", str(DEPLOY / "oz0-migrate")], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert f"schema upgraded from an empty database to revision {HEAD}" in first.stdout
    assert "Pre-installed testkit 0.1.0." in first.stdout
    again = subprocess.run(["sh", str(DEPLOY / "oz0-migrate")], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"schema already at the newest revision, {HEAD}" in again.stdout
    assert again.stdout.strip().endswith(f"Nothing to pre-install from {baked}: every plugin there was stored before.")
    ran = subprocess.run(["oz0", "run", "hello", "there"], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "hi there" in ran.stdout, ran.stderr


def container_engine() -> tuple[str | None, str]:
    """The first of docker, podman whose `info` answers, or None and why not."""
    reasons = []
    for tool in ("docker", "podman"):
        if shutil.which(tool) is None:
            reasons.append(f"{tool}: not installed")
            continue
        info = subprocess.run([tool, "info"], capture_output=True, text=True, timeout=60)
        if info.returncode == 0:
            return tool, ""
        last = (info.stderr.strip().splitlines() or ["no output"])[-1]
        reasons.append(f"{tool} info failed ({last[:160]})")
    return None, "; ".join(reasons)


def test_the_image_builds_and_answers_its_healthcheck_entry_point():
    tool, why = container_engine()
    if tool is None:
        pytest.skip(f"no container engine to build deploy/Dockerfile: {why}")
    tag = "oz0-edge:test"
    built = subprocess.run([tool, "build", "-f", str(DEPLOY / "Dockerfile"), "-t", tag, str(ROOT)],
                           capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stderr[-4000:]
    user = subprocess.run([tool, "run", "--rm", "--entrypoint", "id", tag, "-u"], capture_output=True, text=True,
                          timeout=120)
    assert user.stdout.strip() == "10001"
    helped = subprocess.run([tool, "run", "--rm", tag, "db", "--help"], capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "upgrade" in helped.stdout
