"""The sync profiles are peers: each one file in ``harness/datastore/profiles/``, driving only public steps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.datastore import profiles
from harness.datastore.sync import SyncConfig

PROFILES = Path(profiles.__file__).parent


def test_each_file_is_a_profile_named_for_it():
    assert profiles.SYNC_MODES == ("one-lock", "two-phase")
    for name in profiles.SYNC_MODES:
        p = profiles.profile(name)
        assert callable(p.sync_run) and callable(p.commit_lock_key)
    # where content goes unless the scenario says: only swamp's two-phase DynamoDB writes it under the lock
    assert [(n, b) for n in profiles.SYNC_MODES for b in ("dynamodb", "s3")
            if profiles.profile(n).uploads_at_commit(b)] == [("two-phase", "dynamodb")]
    with pytest.raises(ValueError, match="one-lock, two-phase"):
        profiles.profile("three-phase")
    assert SyncConfig(sync="two-phase").sync == "two-phase"


@pytest.mark.parametrize("name", profiles.SYNC_MODES)
def test_a_profile_uses_no_private_part_of_the_datastore(name):
    tree = ast.parse((PROFILES / f"{name.replace('-', '_')}.py").read_text())
    private = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("_")})
    assert private == [], f"{name} reaches into {private}"
    # the datastore is a type here only (it imports the profiles): importing it at run time would be a cycle
    runtime = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "harness.datastore.sync" not in runtime
