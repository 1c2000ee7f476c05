"""The two-phase scenario keys: swamp's values picked by backend (and again when --backend changes it), refusals."""

from __future__ import annotations

import pytest

from harness.config import scenario as scenarios
from harness.core.errors import HarnessError


def _load(tmp_path, datastore: str, lock: str = "", backend: str = "dynamodb"):
    p = tmp_path / "s.toml"
    p.write_text(f'name = "s"\nbackend = "{backend}"\n[datastore]\n{datastore}\n[lock]\n{lock}\n')
    return scenarios.load(str(p))


def test_swamp_values_follow_the_backend_and_its_override():
    sc = scenarios.load("two-phase-namespaced")
    ds = sc.datastore
    assert (ds.sync, ds.bookkeeping, ds.upload_concurrency, ds.download_concurrency, ds.dirty_path_cap) == (
        "two-phase", "swamp", 10, 1, 1000)
    assert sc.lock.backoff == "swamp-dynamodb"
    s3 = sc.with_overrides(backend="s3")
    assert (s3.datastore.upload_concurrency, s3.datastore.download_concurrency, s3.datastore.dirty_path_cap) == (
        25, 50, 200)
    assert s3.lock.backoff == "swamp-s3"
    assert s3.with_overrides(backend="dynamodb").datastore == ds  # and back


def test_numbers_given_stay_what_they_are(tmp_path):
    sc = _load(tmp_path, 'sync = "two-phase"\nupload_concurrency = 4\ndirty_path_cap = 7', 'backoff = "swamp-s3"')
    o = sc.with_overrides(backend="s3")
    assert (o.datastore.upload_concurrency, o.datastore.dirty_path_cap, o.lock.backoff) == (4, 7, "swamp-s3")


def test_one_lock_is_the_default():
    ds = scenarios.load("namespaced").datastore
    assert (ds.sync, ds.bookkeeping, ds.upload_concurrency, ds.dirty_path_cap) == ("one-lock", "harness", 1, 0)


@pytest.mark.parametrize(("datastore", "lock", "says"), [
    ('sync = "two-phase"\nindex_commit = "full"', "", "index_commit"),
    ('sync = "two-phase"\ngsi = "legacy"', "", "gsi"),
    ('sync = "both"', "", "sync"),
    ('bookkeeping = "none"', "", "bookkeeping"),
    ("upload_concurrency = 0", "", "upload_concurrency"),
    ('dirty_path_cap = "lots"', "", "dirty_path_cap"),
    ("", 'backoff = "linear"', "backoff"),
    ('push_scope = "all"', "", "push_scope"),
    ('sync = "two-phase"\nexport_at = "before"', "", "export_at"),
    ('export_at = "swamp"', "", "export_at"),  # the export inside two-phase's commit: one-lock has none
    ('registry_adds = "swamp"', "", "registry_adds"),  # swamp's registry needs swamp's bookkeeping
    ('retries = "many"', "", "retries"),
])
def test_bad_values_are_one_line_errors_naming_the_key(tmp_path, datastore, lock, says):
    with pytest.raises(HarnessError) as e:
        _load(tmp_path, datastore, lock)
    msg = str(e.value)
    assert "\n" not in msg and says in msg and "s.toml" in msg


def test_legacy_gsi_is_fine_for_two_phase_on_s3(tmp_path):
    assert _load(tmp_path, 'sync = "two-phase"\ngsi = "legacy"', backend="s3").datastore.sync == "two-phase"


def test_swamps_dynamodb_keys_default_to_the_harness_and_the_two_phase_scenarios_set_swamp():
    ds = scenarios.load("namespaced").datastore
    assert (ds.gsi, ds.push_scope, ds.export_at, ds.registry_adds, ds.retries) == (
        "per-model", "changed", "after-commit", "one", "harness")
    for name in ("two-phase-namespaced", "two-phase-shared-lock", "hot-global-item", "registry-growth"):
        ds = scenarios.load(name).datastore
        assert (ds.gsi, ds.push_scope, ds.export_at, ds.registry_adds, ds.retries) == ("swamp",) * 5, name
        assert ds.global_poll_s == 1.0, name  # swamp's fixed poll of the global lock
    ds = scenarios.load("two-phase-safety").datastore  # no swamp bookkeeping there: no registry to add to
    assert (ds.gsi, ds.push_scope, ds.export_at, ds.retries, ds.registry_adds) == ("swamp",) * 4 + ("one",)
