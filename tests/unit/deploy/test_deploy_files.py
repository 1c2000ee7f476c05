"""docker-compose.yml and deploy/k8s, checked without an engine: the Compose specification, the Kubernetes
schemas, the kustomizations as `kubectl apply -k` renders them, pinned images, and the seams between the
parts (endpoints, Secrets, ports, login). The command lines themselves run in tests/e2e/test_deploy_e2e.py.
"""

from __future__ import annotations

import copy
import json
import re
from importlib import metadata, resources

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.deploy_files import (
    COMPOSE,
    COMPOSE_HEADLESS,
    COMPOSE_SEAWEEDFS,
    K8S,
    KUBECTL,
    KUSTOMIZATIONS,
    ROOT,
    find,
    image_pin,
    interpolate,
    kustomize,
    load_compose,
    pod_spec,
    workloads,
)

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl (with its bundled kustomize) is not installed")
K8S_VERSIONS = ("1.29", "1.37")  # the oldest still common in managed clusters, and the newest schema shipped
SECRETS = {"harness-aws", "harness-web-login"}


# ---- Compose -----------------------------------------------------------------------------------


def compose_schema() -> dict:
    """The Compose specification's JSON schema as check-jsonschema vendors it (offline, pinned with it)."""
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads((vendor / "compose-spec.json").read_text())


def compose_errors(doc: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(compose_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_the_compose_schema_is_the_pinned_vendored_one():
    assert metadata.version("check-jsonschema") == "0.39.0"
    assert compose_schema()["title"] == "Compose Specification"


@pytest.mark.parametrize("files", [(COMPOSE,), (COMPOSE_HEADLESS,), (COMPOSE, COMPOSE_HEADLESS), (COMPOSE_SEAWEEDFS,),
                                   (COMPOSE, COMPOSE_SEAWEEDFS, COMPOSE_HEADLESS)],
                         ids=["compose", "headless-override", "merged", "seaweedfs-override", "merged-seaweedfs"])
def test_compose_files_match_the_compose_specification(files):
    raw = load_compose(*files)
    assert compose_errors(raw) == []
    assert compose_errors(interpolate(raw, {})) == []  # with every default filled in, as `compose up` sees it


def test_the_compose_check_fails_on_a_misspelt_key_and_a_wrong_type():
    doc = load_compose(COMPOSE)
    doc["services"]["master"]["comand"] = doc["services"]["master"].pop("command")
    doc["services"]["worker"]["depends_on"] = "master"
    errors = compose_errors(doc)
    assert any("comand" in e for e in errors), errors
    assert any(e.startswith("services/worker/depends_on") for e in errors), errors


@pytest.mark.parametrize("files", [(COMPOSE, COMPOSE_HEADLESS), (COMPOSE, COMPOSE_SEAWEEDFS, COMPOSE_HEADLESS)],
                         ids=["default", "seaweedfs"])
def test_compose_references_resolve(files):
    doc = load_compose(*files)
    services = doc["services"]
    declared_volumes = set(doc.get("volumes") or {})
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        if isinstance(deps, list):  # the short form: started, not healthy
            deps = {d: {"condition": "service_started"} for d in deps}
        for dep, cond in deps.items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            assert not services[dep].get("profiles"), f"{name} (default) depends on {dep}, which needs a profile"
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep} to be healthy; it has no healthcheck"
        for v in svc.get("volumes") or []:
            source = v.split(":", 1)[0]
            assert source.startswith((".", "/")) or source in declared_volumes, f"{name}: volume {source} undeclared"


def test_compose_default_stand_ins_and_the_opt_in_dynamodb_local():
    doc = interpolate(load_compose(COMPOSE), {})
    services = doc["services"]
    env = services["master"]["environment"]
    # DynamoDB: the harness's own stand-in served from the harness image; S3: versitygw (conditional writes)
    assert env["AWS_ENDPOINT_URL_DYNAMODB"] == "http://standin:8000"
    assert services["standin"]["command"][:2] == ["harness", "standin"] and "--port" in services["standin"]["command"]
    assert services["standin"]["command"][services["standin"]["command"].index("--port") + 1] == "8000"
    assert env["AWS_ENDPOINT_URL_S3"] == "http://s3:7070"
    image = services["s3"]["image"]
    assert image.startswith("ghcr.io/versity/versitygw:v")
    # v1.8.0 is the first release with If-None-Match / If-Match on PutObject atomic per key (versitygw#2288)
    assert tuple(int(x) for x in image_pin(image).lstrip("v").split(".")) >= (1, 8, 0)
    assert services["s3"]["environment"]["VGW_PORT"] == ":7070"
    # the stand-in's root account is the key pair the harness signs with
    assert services["s3"]["environment"]["ROOT_ACCESS_KEY_ID"] == env["AWS_ACCESS_KEY_ID"]
    assert services["s3"]["environment"]["ROOT_SECRET_ACCESS_KEY"] == env["AWS_SECRET_ACCESS_KEY"]
    assert services["dynamodb-local"]["profiles"] == ["dynamodb-local"]
    assert not any("dynamodb-local" in (s.get("depends_on") or {}) for s in services.values())
    assert "minio" not in COMPOSE.read_text().lower()
    for name in ("standin", "s3", "dynamodb-local", "worker"):
        assert "ports" not in services[name], f"{name} publishes a port on the host"


def test_compose_web_ui_needs_the_login_and_is_published_on_loopback():
    doc = load_compose(COMPOSE)
    master = doc["services"]["master"]
    cmd = master["command"]
    assert cmd[:2] == ["harness", "run"] and "--master" in cmd and "--web" in cmd
    assert cmd[cmd.index("--web-host") + 1] == "0.0.0.0" and "--web-login" in cmd
    assert master["environment"]["HARNESS_WEB_PASSWORD"] == "${HARNESS_WEB_PASSWORD:-}"  # no password in the file
    published = interpolate(master["ports"], {})
    assert published == ["127.0.0.1:8089:8089"]
    assert interpolate(master["ports"], {"HARNESS_WEB_BIND": "0.0.0.0"}) == ["0.0.0.0:8089:8089"]
    assert "--run-dir" not in cmd  # a run id of its own under /app/runs for every `compose up`
    assert "runs:/app/runs" in master["volumes"]
    assert "WORKDIR /app\n" in (ROOT / "Dockerfile").read_text()


def test_compose_headless_override_waits_for_the_scaled_workers():
    doc = load_compose(COMPOSE, COMPOSE_HEADLESS)
    cmd = interpolate(doc["services"]["master"]["command"], {"WORKERS": "5"})
    assert "--web" not in cmd and "--master" in cmd
    assert cmd[cmd.index("--expect-workers") + 1] == "5"
    assert interpolate(doc["services"]["worker"]["deploy"]["replicas"], {"WORKERS": "5"}) == "5"


def distributed_docs() -> str:
    """The page that documents the deployments (it was the README's "Distributed runs" section)."""
    return (ROOT / "docs" / "distributed.md").read_text()


def test_readme_compose_and_kubectl_commands_match_the_files():
    section = distributed_docs()
    commands = [ln.strip() for ln in section.splitlines() if re.search(r"\b(docker compose|kubectl)\b", ln)
                and not ln.lstrip().startswith(("#", "-", "`docker-compose.yml`"))]
    compose_cmds = [c for c in commands if "docker compose" in c]
    kubectl_cmds = [c for c in commands if c.startswith("kubectl") or " kubectl " in c]
    assert len(compose_cmds) >= 3 and len(kubectl_cmds) >= 3, commands
    doc = load_compose(COMPOSE, COMPOSE_HEADLESS)
    services = doc["services"]
    profiles = {p for s in services.values() for p in s.get("profiles", [])}
    variables = set(re.findall(r"\$\{([A-Z_]+)", COMPOSE.read_text() + COMPOSE_HEADLESS.read_text()))
    for c in compose_cmds:
        for f in re.findall(r"-f (\S+)", c):
            assert (ROOT / f).is_file(), f"{c}: no file {f}"
        for p in re.findall(r"--profile (\S+)", c):
            assert p in profiles, f"{c}: no profile {p}"
        for s in re.findall(r"--scale (\S+)=", c) + re.findall(r"--exit-code-from (\S+)", c):
            assert s in services, f"{c}: no service {s}"
        for var in re.findall(r"\b([A-Z][A-Z_]+)=", c.split("docker compose")[0]):
            assert var in variables, f"{c}: {var} is not read by the compose files"
        if " up" in c and "--exit-code-from" in c:
            assert "--abort-on-container-failure" in c, c  # else a worker's clean exit would stop the master
    for c in kubectl_cmds:
        for path in re.findall(r"(deploy/k8s\S*)", c):
            assert (ROOT / path.rstrip("/")).exists(), f"{c}: no {path}"
        for name in re.findall(r"secret generic (\S+)", c):
            assert name in SECRETS, f"{c}: the manifests read no Secret {name}"


def test_compose_seaweedfs_option_is_a_distributed_store_behind_the_s3_endpoint():
    """The override's S3: master, two volume servers, filer, S3 gateway, wired by name; telemetry off."""
    base = interpolate(load_compose(COMPOSE), {})
    doc = interpolate(load_compose(COMPOSE, COMPOSE_SEAWEEDFS), {})
    services = doc["services"]
    for role in ("master", "worker"):  # pointed at the gateway; every other variable kept
        env = services[role]["environment"]
        assert env["AWS_ENDPOINT_URL_S3"] == "http://seaweedfs-s3:8333"
        assert {k: v for k, v in env.items() if k != "AWS_ENDPOINT_URL_S3"} == \
            {k: v for k, v in base["services"][role]["environment"].items() if k != "AWS_ENDPOINT_URL_S3"}
    assert services["master"]["depends_on"]["seaweedfs-s3"]["condition"] == "service_healthy"
    assert services["master"]["depends_on"]["standin"]["condition"] == "service_healthy"  # kept from the base
    weed = {n: s for n, s in services.items() if n.startswith("seaweedfs-")}
    roles = {n: s["command"][0] for n, s in weed.items()}
    assert sorted(roles.values()) == ["filer", "master", "s3", "volume", "volume"]
    assert {s["image"] for s in weed.values()} == {"chrislusf/seaweedfs:4.47"}

    def flag(svc: dict, name: str) -> str:
        found = [a.split("=", 1)[1] for a in svc["command"] if a.startswith(f"-{name}=")]
        assert len(found) == 1, (name, svc["command"])
        return found[0]

    master = weed["seaweedfs-master"]
    assert flag(master, "telemetry") == "false" and flag(master, "ip") == "seaweedfs-master"
    for name, svc in weed.items():
        if roles[name] in ("volume", "filer"):
            assert flag(svc, "master") == f"seaweedfs-master:{flag(master, 'port')}"
        if roles[name] != "s3":
            assert flag(svc, "ip") == name  # what it registers as: the name the others reach it by
    s3 = weed["seaweedfs-s3"]
    assert flag(s3, "filer") == f"seaweedfs-filer:{flag(weed['seaweedfs-filer'], 'port')}"
    assert f":{flag(s3, 'port')}" in services["master"]["environment"]["AWS_ENDPOINT_URL_S3"]
    assert len({svc["volumes"][0] for n, svc in weed.items() if roles[n] == "volume"}) == 2  # a disk each
    assert all("ports" not in svc for svc in weed.values())  # nothing published on the host


# ---- images ------------------------------------------------------------------------------------


def test_image_pin_reads_tags_and_digests():
    assert image_pin("minio/minio:latest") is None
    assert image_pin("amazon/dynamodb-local") is None
    assert image_pin("registry:5000/harness") is None
    assert image_pin("ghcr.io/versity/versitygw:v1.8.0") == "v1.8.0"
    assert image_pin("harness@sha256:" + "a" * 64) == "sha256:" + "a" * 64


def compose_images() -> list[str]:
    doc = interpolate(load_compose(COMPOSE, COMPOSE_SEAWEEDFS), {})
    return [s["image"] for s in doc["services"].values() if "image" in s]


def test_every_compose_image_and_the_base_image_are_pinned():
    images = compose_images()
    assert len(images) >= 5
    assert [i for i in images if image_pin(i) is None] == []
    froms = re.findall(r"^FROM (\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert froms and all(image_pin(f) for f in froms), froms
    assert all(re.search(r":3\.11\.\d+-slim-\w+", f) for f in froms), froms  # a patch release, a Debian release


@needs_kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or "base")
def test_every_kubernetes_image_is_pinned_and_the_harness_image_is_one(path):
    images = [c["image"] for w in workloads(kustomize(path)) for c in pod_spec(w)["containers"]]
    assert [i for i in images if image_pin(i) is None] == []
    harness = {i for i in images if "versitygw" not in i and "seaweedfs" not in i}
    assert harness == {"harness:0.1.0"}, harness  # one place to point them at a registry: `images:`


def test_the_raw_kubernetes_manifests_pin_their_images_too():
    for f in K8S.rglob("*.yaml"):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc and doc.get("kind") in ("Deployment", "Job", "Pod"):
                for c in pod_spec(doc)["containers"]:
                    assert image_pin(c["image"]), f"{f}: {c['image']}"


# ---- Kubernetes ---------------------------------------------------------------------------------


def test_every_kustomization_lists_files_and_directories_that_exist():
    for k in K8S.rglob("kustomization.yaml"):
        doc = yaml.safe_load(k.read_text())
        for entry in doc.get("resources", []) + doc.get("components", []):
            assert (k.parent / entry).exists(), f"{k}: {entry} does not exist"
        used = {(k.parent / e).resolve() for e in doc.get("resources", [])}
        for f in k.parent.glob("*.yaml"):
            assert f.name == "kustomization.yaml" or f.resolve() in used, f"{k}: {f.name} is not listed"
    assert (K8S / "kustomization.yaml").is_file()  # `kubectl apply -k deploy/k8s`


def k8s_errors(doc: dict, version: str) -> str | None:
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return f"{doc['kind']}/{doc['metadata'].get('name')}: {e.message} at {list(e.absolute_path)}"
    return None


@needs_kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or "base")
def test_rendered_manifests_match_the_kubernetes_schemas(path):
    assert metadata.version("kubernetes-validate") == "1.37.0"
    docs = kustomize(path)
    assert docs
    for version in K8S_VERSIONS:
        assert [e for d in docs if (e := k8s_errors(d, version))] == []


def test_raw_manifests_match_the_kubernetes_schemas():
    count = 0
    for f in sorted(K8S.rglob("*.yaml")):
        if f.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(f.read_text()):
            count += 1
            assert k8s_errors(doc, K8S_VERSIONS[-1]) is None, f
    assert count >= 9


def test_the_kubernetes_check_fails_on_a_misspelt_field():
    doc = yaml.safe_load((K8S / "base" / "worker-deployment.yaml").read_text())
    broken = copy.deepcopy(doc)
    container = broken["spec"]["template"]["spec"]["containers"][0]
    container["comand"] = container.pop("command")
    assert k8s_errors(doc, "1.37") is None
    assert "comand" in (k8s_errors(broken, "1.37") or "")


@needs_kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or "base")
def test_credentials_come_from_secrets_only(path):
    docs = kustomize(path)
    assert [d for d in docs if d["kind"] == "Secret"] == []  # created by the user (README), never in the files
    referenced = set()
    for w in workloads(docs):
        for c in pod_spec(w)["containers"]:
            for source in c.get("envFrom", []):
                if "secretRef" in source:
                    referenced.add(source["secretRef"]["name"])
            for e in c.get("env", []):
                if re.search(r"SECRET|PASSWORD|ACCESS_KEY|TOKEN", e["name"]):
                    assert "secretKeyRef" in e.get("valueFrom", {}), f"{e['name']} is not from a Secret"
                    referenced.add(e["valueFrom"]["secretKeyRef"]["name"])
    for cm in (d for d in docs if d["kind"] == "ConfigMap"):
        assert not [k for k in cm.get("data", {}) if re.search(r"SECRET|PASSWORD|ACCESS_KEY|TOKEN", k)]
    assert referenced <= SECRETS and "harness-aws" in referenced


@needs_kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or "base")
def test_master_service_workers_and_ports_fit_together(path):
    docs = kustomize(path)
    service = find(docs, "Service", "harness-master")
    masters = [w for w in workloads(docs) if w["metadata"]["labels"].get("app.kubernetes.io/component") == "master"]
    assert len(masters) == 1
    master = masters[0]
    pod_labels = master["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert ports["master"]["port"] == 5557 and ports["web"]["port"] == 8089  # Locust's (and its charts') ports
    container = pod_spec(master)["containers"][0]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named["master"] == 5557
    args = container["args"]
    assert container["command"] == ["harness"] and args[:2] == ["run", "$(SCENARIO)"] and "--master" in args
    if master["kind"] == "Deployment":
        assert named["web"] == 8089 and "--web" in args and "--web-login" in args
        assert args[args.index("--web-host") + 1] == "0.0.0.0"
        env = {e["name"]: e for e in container["env"]}
        assert env["HARNESS_WEB_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "harness-web-login"
        assert master["spec"]["replicas"] == 1 and master["spec"]["strategy"]["type"] == "Recreate"
    else:
        assert master["kind"] == "Job" and "--web" not in args and "--expect-workers" in args
        assert pod_spec(master)["restartPolicy"] == "Never" and master["spec"]["backoffLimit"] == 0
        run = find(docs, "ConfigMap", component=None, name=next(
            d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"
            and d["metadata"]["name"].startswith("harness-run")))
        worker_deploy = find(docs, "Deployment", "harness-worker")
        assert int(run["data"]["WORKERS"]) == worker_deploy["spec"]["replicas"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(master)["volumes"]}
    assert volumes[mounts["/app/runs"]]["persistentVolumeClaim"]["claimName"] == "harness-runs"
    find(docs, "PersistentVolumeClaim", "harness-runs")
    worker = find(docs, "Deployment", "harness-worker")
    wargs = pod_spec(worker)["containers"][0]["args"]
    assert wargs[0] == "worker"
    assert wargs[wargs.index("--master-host") + 1] == service["metadata"]["name"]
    assert wargs[wargs.index("--master-port") + 1] == "5557"


@needs_kubectl
@pytest.mark.parametrize("path", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(K8S)) or "base")
def test_aws_or_in_cluster_stand_ins(path):
    docs = kustomize(path)
    master = next(w for w in workloads(docs) if w["metadata"]["labels"]["app.kubernetes.io/component"] == "master")
    args = pod_spec(master)["containers"][0]["args"]
    endpoints = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("harness-endpoints")]
    if "standins" not in str(path):
        assert "--aws" in args and endpoints == []
        return
    assert "--aws" not in args and len(endpoints) == 1
    data = endpoints[0]["data"]
    s3_service = "harness-seaweedfs-s3" if "seaweedfs" in str(path) else "harness-s3"
    for var, service_name in (("AWS_ENDPOINT_URL_DYNAMODB", "harness-standin"), ("AWS_ENDPOINT_URL_S3", s3_service)):
        host, port = re.fullmatch(r"http://([\w-]+):(\d+)", data[var]).groups()
        svc = find(docs, "Service", host)
        assert host == service_name and int(port) in [p["port"] for p in svc["spec"]["ports"]]
        backend = find(docs, "Deployment", host)
        assert svc["spec"]["selector"].items() <= backend["spec"]["template"]["metadata"]["labels"].items()
    standin = pod_spec(find(docs, "Deployment", "harness-standin"))["containers"][0]
    assert standin["args"][:1] == ["standin"] and standin["args"][standin["args"].index("--port") + 1] == "8000"
    if "seaweedfs" in str(path):
        assert not [d for d in docs if d["metadata"]["name"] == "harness-s3"]  # versitygw replaced, not beside it
        return
    s3 = pod_spec(find(docs, "Deployment", "harness-s3"))["containers"][0]
    assert s3["image"].startswith("ghcr.io/versity/versitygw:v")
    s3_env = {e["name"]: e for e in s3["env"]}
    assert s3_env["ROOT_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "harness-aws",
                                                                          "key": "AWS_ACCESS_KEY_ID"}


@needs_kubectl
def test_kubernetes_seaweedfs_option_is_a_distributed_store_wired_through_services():
    docs = kustomize(K8S / "overlays" / "standins-seaweedfs")
    weed = {w["metadata"]["name"]: w for w in workloads(docs) if "seaweedfs" in w["metadata"]["name"]}
    assert set(weed) == {f"harness-seaweedfs-{r}" for r in ("master", "volume", "filer", "s3")}
    assert weed["harness-seaweedfs-volume"]["spec"]["replicas"] >= 2
    containers = {n: pod_spec(w)["containers"][0] for n, w in weed.items()}
    assert {c["image"] for c in containers.values()} == {"chrislusf/seaweedfs:4.47"}

    def flag(name: str, key: str) -> str:
        found = [a.split("=", 1)[1] for a in containers[name]["args"] if a.startswith(f"-{key}=")]
        assert len(found) == 1, (name, key)
        return found[0]

    def reaches(address: str) -> None:
        """host:port is a Service that selects the workload of that name and serves HTTP and gRPC (+10000)."""
        host, port = address.split(":")
        svc = find(docs, "Service", host)
        ports = {p["port"] for p in svc["spec"]["ports"]}
        assert int(port) in ports and (host.endswith("-s3") or int(port) + 10000 in ports), (host, ports)
        assert svc["spec"]["selector"].items() <= weed[host]["spec"]["template"]["metadata"]["labels"].items()

    assert flag("harness-seaweedfs-master", "telemetry") == "false"
    for role in ("volume", "filer"):
        reaches(flag(f"harness-seaweedfs-{role}", "master"))
        assert flag(f"harness-seaweedfs-{role}", "ip") == "$(POD_IP)"  # registered by the address it is reached at
        env = {e["name"]: e for e in containers[f"harness-seaweedfs-{role}"]["env"]}
        assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    reaches(flag("harness-seaweedfs-s3", "filer"))
    endpoint = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith(
        "harness-endpoints"))["data"]["AWS_ENDPOINT_URL_S3"]
    reaches(endpoint.removeprefix("http://"))
    for c in containers.values():  # as every other pod: unprivileged, read-only root, weed's /tmp and /data
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert {m["mountPath"] for m in c["volumeMounts"]} == {"/data", "/tmp"}
    assert all(pod_spec(w)["securityContext"]["runAsNonRoot"] for w in weed.values())


@needs_kubectl
def test_the_readme_secrets_hold_every_key_the_manifests_read():
    section = distributed_docs()
    documented: dict[str, set[str]] = {}
    for line in section.splitlines():
        m = re.search(r"kubectl create secret generic (\S+)", line)
        if m:
            documented[m.group(1)] = set(re.findall(r"--from-literal=([A-Za-z_]+)=", line))
    assert set(documented) == SECRETS
    for path in KUSTOMIZATIONS:
        for w in workloads(kustomize(path)):
            for c in pod_spec(w)["containers"]:
                for e in c.get("env", []):
                    ref = e.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        assert ref["key"] in documented[ref["name"]], f"{path}: {ref} is not in docs/distributed.md"


# ---- the image -----------------------------------------------------------------------------------


def test_the_dockerfile_copies_what_the_entry_points_need_and_runs_unprivileged():
    text = (ROOT / "Dockerfile").read_text()
    copied = {p for line in re.findall(r"^COPY (.+)$", text, re.M) for p in line.split()[:-1]}
    assert {"pyproject.toml", "README.md", "harness", "locustfile.py"} <= copied  # scenarios ship in the package
    assert [p for p in copied if p != "constraints.tx[t]" and not (ROOT / p).exists()] == []  # nothing stale
    assert "constraints.tx[t]" in copied and "pip install -c constraints.txt ." in text  # the tested versions
    assert "ENV PYTHONDONTWRITEBYTECODE=1" in text
    uid = re.search(r"^USER (\d+):(\d+)$", text, re.M)
    assert uid and uid.group(1) != "0"
    assert re.search(r'^VOLUME \["/app/runs"\]$', text, re.M)
    # the Kubernetes pods run as the image's user (and its group owns the run-directory volume)
    for f in (K8S / "base" / "master-deployment.yaml", K8S / "components" / "headless" / "master-job.yaml"):
        ctx = pod_spec(yaml.safe_load(f.read_text()))["securityContext"]
        assert (str(ctx["runAsUser"]), str(ctx["fsGroup"])) == (uid.group(1), uid.group(2)), f


def test_a_non_editable_install_carries_the_locustfile_and_the_web_assets():
    """The image installs the project (not editable): what the entry points load must be package files."""
    import tomllib

    from setuptools import find_namespace_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    find = config["packages"]["find"]
    assert find.get("namespaces", True)  # pyproject discovery: directories without __init__.py count
    packages = set(find_namespace_packages(str(ROOT), include=find["include"]))
    assert {"harness.load", "harness.load.web", "harness.aws", "harness.report"} <= packages
    for module in ("harness/load/locustfile.py", "harness/supervisor/distributed.py", "harness/load/web/login.py",
                   "harness/aws/moto_server.py"):
        assert (ROOT / module).is_file() and module.rsplit("/", 1)[0].replace("/", ".") in packages
    globs = config["package-data"]["harness.load.web"]
    assert any((ROOT / "harness/load/web").glob(g) for g in globs) and "*.js" in globs  # harness.js
