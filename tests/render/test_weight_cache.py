"""The shared weight cache in `plan`: one snapshot per revision, room for two during a revision change."""

from __future__ import annotations

import json

from k3deploy.preflight.weight_cache import cache_note, weight_cache
from k3deploy.profile import load_profile
from tests.conftest import run_cli

K3 = "kimi-k3-gb300-tp16"
GIB = 1024**3


def test_a_new_revision_needs_two_snapshots_of_room() -> None:
    profile = load_profile(K3, ["parallel.replicas=2"])
    cache = weight_cache(profile)
    assert cache is not None
    assert cache.snapshot_bytes == profile.model.checkpoint_bytes + profile.speculative.draft_bytes
    assert (cache.cache_bytes, cache.snapshots, cache.upgrade_fits) == (2048 * GIB, 1, False)
    note = cache_note(cache)
    assert "shared by the 2 groups" in note
    assert note.endswith(
        f"does NOT fit: set kubernetes.model_cache_size to at least {-(-2 * cache.snapshot_bytes // GIB)}Gi"
    )
    roomy = weight_cache(load_profile(K3, ["kubernetes.model_cache_size=3Ti"]))
    assert roomy is not None and roomy.upgrade_fits and cache_note(roomy).endswith(" - fits")
    assert weight_cache(load_profile("local-cpu")) is None


def test_plan_reports_the_cache_in_table_and_json() -> None:
    table = run_cli("plan", "-p", K3)
    assert table.returncode == 0, table.stderr
    assert "weight cache: 2,048 GiB (one cache); one snapshot (weights + draft) is 1,459 GiB" in table.stderr
    report = json.loads(run_cli("plan", "-p", K3, "--set", "kubernetes.model_cache_size=3Ti", "-o", "json").stdout)
    assert report["weight_cache"]["snapshots"] == 2 and report["weight_cache"]["upgrade_fits"] is True
    assert "placement" not in report
