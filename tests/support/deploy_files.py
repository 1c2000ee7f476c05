"""Reading docker-compose.yml and deploy/k8s the way their engines do, for tests that have no engine.

Compose: the YAML (merge keys included), override files merged service by
service, and ``${VAR:-default}`` interpolation. Kubernetes: ``kubectl
kustomize`` (kustomize v5, bundled with kubectl, offline) renders each
kustomization; a container's environment is assembled from its ``envFrom`` /
``env`` and ``$(VAR)`` in its arguments is expanded, as the kubelet does.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_HEADLESS = ROOT / "deploy" / "compose" / "headless.yml"
COMPOSE_SEAWEEDFS = ROOT / "deploy" / "compose" / "seaweedfs.yml"
MERGED_MAPPINGS = ("environment", "depends_on")
K8S = ROOT / "deploy" / "k8s"
KUSTOMIZATIONS = [K8S, K8S / "overlays" / "standins", K8S / "overlays" / "headless",
                  K8S / "overlays" / "standins-headless", K8S / "overlays" / "standins-seaweedfs"]
KUBECTL = shutil.which("kubectl")

_COMPOSE_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}")
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


# ---- compose ----------------------------------------------------------------------------------


def load_compose(*files: Path) -> dict:
    """The files merged as `docker compose -f A -f B` does for what these files use (keys, command lists)."""
    merged: dict = {}
    for f in files or (COMPOSE,):
        doc = yaml.safe_load(f.read_text())
        for key, value in doc.items():
            if key == "services":
                services = merged.setdefault("services", {})
                for name, svc in value.items():
                    old, new = services.get(name, {}), copy.deepcopy(svc)
                    for merged_key in MERGED_MAPPINGS:  # Compose merges these key by key; the rest is replaced
                        if isinstance(old.get(merged_key), dict) and isinstance(new.get(merged_key), dict):
                            new[merged_key] = {**old[merged_key], **new[merged_key]}
                    services[name] = {**old, **new}
            elif isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
            else:
                merged[key] = value
    return merged


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's ``${VAR}``, ``${VAR:-default}`` (unset or empty) and ``${VAR-default}`` (unset), recursively."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, default = m.group(1), m.group(2), m.group(3) or ""
        if op == ":-":
            return env.get(name) or default
        if op == "-":
            return env[name] if name in env else default
        return env.get(name, "")

    return _COMPOSE_VAR.sub(one, value)


# ---- kubernetes -------------------------------------------------------------------------------


def kustomize(path: Path) -> list[dict]:
    """`kubectl kustomize PATH`: the objects `kubectl apply -k PATH` would send."""
    assert KUBECTL, "kubectl is not installed"
    out = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(docs: list[dict], kind: str, name: str | None = None, component: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
             and (component is None or d["metadata"].get("labels", {}).get("app.kubernetes.io/component")
                  == component)]
    assert len(found) == 1, f"{len(found)} {kind} {name or component}"
    return found[0]


def workloads(docs: list[dict]) -> list[dict]:
    return [d for d in docs if d["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet", "Pod")]


def pod_spec(workload: dict) -> dict:
    return workload["spec"] if workload["kind"] == "Pod" else workload["spec"]["template"]["spec"]


def container_env(docs: list[dict], container: dict, secrets: dict[str, dict[str, str]]) -> dict[str, str]:
    """The container's environment from the rendered ConfigMaps and the given Secrets (name -> data)."""
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            ref = source["configMapRef"]
            data = config_maps.get(ref["name"])
            assert data is not None or ref.get("optional"), f"ConfigMap {ref['name']} is missing"
            env.update(data or {})
        if "secretRef" in source:
            ref = source["secretRef"]
            data = secrets.get(ref["name"])
            assert data is not None or ref.get("optional"), f"Secret {ref['name']} is missing"
            env.update(data or {})
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = expand(entry["value"], env)
            continue
        ref = entry["valueFrom"].get("secretKeyRef") or entry["valueFrom"].get("configMapKeyRef")
        source = secrets if "secretKeyRef" in entry["valueFrom"] else config_maps
        value = source.get(ref["name"], {}).get(ref["key"])
        assert value is not None or ref.get("optional"), f"{ref['name']}/{ref['key']} is missing"
        if value is not None:
            env[entry["name"]] = value
    return env


def expand(text: str, env: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion (an unknown variable stays as written)."""
    return _K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), text)


# ---- images -----------------------------------------------------------------------------------


def image_pin(image: str) -> str | None:
    """The tag or digest an image reference is pinned to, or None (no tag, or `latest`)."""
    if _DIGEST.search(image):
        return image.split("@", 1)[1]
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        return None
    tag = name.split(":", 1)[1]
    return None if tag in ("", "latest") else tag
