"""swamp's path-addressable file tree.

``data/{model-type}/{model-id}/{data-name}/{version}/raw`` with ``metadata.yaml``
beside it and a ``latest`` pointer per data name; with a namespace the namespace
is the outermost segment.
"""

from __future__ import annotations

import re

from harness.datastore.errors import ConfigError

_SEGMENT = re.compile(r"^[A-Za-z0-9@._-]+$")
_LOCK_KEY = re.compile(r"^[A-Za-z0-9@._:/-]+$")
_TABLE = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def check_table_name(name: str) -> str:
    if not _TABLE.match(name or ""):
        raise ConfigError(f"invalid DynamoDB table name {name!r}: 3-255 characters of letters, digits, '_.-'")
    return name


def check_bucket_name(name: str) -> str:
    if not _BUCKET.match(name or "") or ".." in name:
        raise ConfigError(f"invalid S3 bucket name {name!r}: 3-63 lowercase letters, digits, '.' or '-'")
    return name


def check_segment(value: str, what: str) -> str:
    if not value or not _SEGMENT.match(value) or value in (".", ".."):
        raise ConfigError(
            f"invalid {what} {value!r}: use letters, digits, '@', '.', '_' or '-' (no '/' or spaces)"
        )
    return value


def check_lock_key(key: str) -> str:
    if not key or not _LOCK_KEY.match(key) or "//" in key.replace("://", ""):
        raise ConfigError(
            f"invalid lock key {key!r}: use letters, digits and '@._:/-' only, no spaces or empty segments"
        )
    return key


class Paths:
    """Builds relative paths inside one (optionally namespaced) datastore."""

    def __init__(self, namespace: str | None = None) -> None:
        self.namespace = check_segment(namespace, "namespace") if namespace else None
        self.root = f"{self.namespace}/" if self.namespace else ""

    def _p(self, rel: str) -> str:
        return self.root + rel

    def model_dir(self, model_type: str, model_id: str) -> str:
        return self._p(f"data/{model_type}/{model_id}/")

    def data_raw(self, model_type: str, model_id: str, name: str, version: int) -> str:
        return self._p(f"data/{model_type}/{model_id}/{name}/{version}/raw")

    def data_metadata(self, model_type: str, model_id: str, name: str, version: int) -> str:
        return self._p(f"data/{model_type}/{model_id}/{name}/{version}/metadata.yaml")

    def data_latest(self, model_type: str, model_id: str, name: str) -> str:
        return self._p(f"data/{model_type}/{model_id}/{name}/latest")

    def output_record(self, model_type: str, model_id: str, run_id: str) -> str:
        return self._p(f"outputs/{model_type}/{model_id}/{run_id}.yaml")

    def model_lock(self, model_type: str, model_id: str) -> str:
        """swamp's per-model lock key (two-phase sync)."""
        return self._p(f"data/{model_type}/{model_id}/.lock")

    def definition(self, model_type: str, model_id: str) -> str:
        return self._p(f"models/{model_type}/{model_id}/definition.yaml")

    def catalog_export(self) -> str:
        return self._p(".catalog-export.json")


def model_of(rel_path: str, namespace: str | None) -> tuple[str, str] | None:
    """(type, id) owning a path under data/, outputs/ or models/, else None."""
    parts = rel_path.split("/")
    if namespace:
        if not parts or parts[0] != namespace:
            return None
        parts = parts[1:]
    if len(parts) >= 3 and parts[0] in ("data", "outputs", "models"):
        return parts[1], parts[2]
    return None
