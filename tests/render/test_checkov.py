"""checkov, a widely used IaC scanner, on the rendered set of every built-in Kubernetes profile.

checkov does not know the LeaderWorkerSet, so its leader and worker pod templates are scanned as Pods too (their
metadata, skip annotations included, is what LWS gives the pods). The set must fail no check that is not skipped
on the object with checkov's own annotation and a reason (k3deploy.render.scan_skips). checkov pins many
dependencies, so it lives in its own virtual environment (.ci/setup creates `.venv-checkov`) and runs as a
subprocess. Without that environment the test is skipped, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.manifests import build, dump
from k3deploy.render.scan_skips import SERVING, WORKER, image_skips
from tests.conftest import REPO_ROOT

KUBE_PROFILES = [name for name in builtin_names() if load_profile(name).target == "kubernetes"]
CHECKOV = REPO_ROOT / os.environ.get("K3DEPLOY_CHECKOV_VENV", ".venv-checkov") / "bin" / "checkov"
#: What checkov reports when a skip annotation names no reason (checkov/kubernetes/kubernetes_utils.py).
NO_REASON = "No comment provided"


def checkov() -> Path:
    """The checkov executable, or a skip (a failure in CI) saying how to get it."""
    if CHECKOV.is_file():
        return CHECKOV
    message = f"checkov is not installed in {CHECKOV.parent.parent.name} (run: bash .ci/setup)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def lws_pods(lws: dict[str, Any]) -> list[dict[str, Any]]:
    """The LeaderWorkerSet's leader and worker templates as the Pods they become."""
    pods = []
    for role in ("leader", "worker"):
        template = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]
        meta = {
            "name": f"{lws['metadata']['name']}-{role}",
            "namespace": lws["metadata"]["namespace"],
            **template.get("metadata", {}),
        }
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]})
    return pods


def scan(directory: Path) -> dict[str, Any]:
    """checkov's JSON results for the YAML files of `directory` (Kubernetes framework only, nothing downloaded)."""
    done = subprocess.run(
        [str(checkov()), "-d", str(directory), "--framework", "kubernetes", "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "BC_API_KEY": "", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"},
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    return (report if isinstance(report, dict) else report[0])["results"]


@pytest.mark.parametrize("name", KUBE_PROFILES)
def test_the_rendered_set_fails_no_unskipped_check(name: str, tmp_path: Path) -> None:
    objects = [m.obj for m in build(load_profile(name))]
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    pods = lws_pods(lws)
    bare = {**pods[1], "metadata": {**pods[1]["metadata"], "name": "bare-worker", "annotations": {}}}
    for index, obj in enumerate([*objects, *pods, bare]):
        (tmp_path / f"{index:02d}.yaml").write_text(dump(obj))
    results = scan(tmp_path)

    failed = [(c["check_id"], c["resource"]) for c in results["failed_checks"]]
    judged = [c for c in failed if "bare-worker" not in c[1]]
    assert judged == [], judged
    unexplained = [
        (c["check_id"], c["resource"])
        for c in results["skipped_checks"]
        if c["check_result"].get("suppress_comment", NO_REASON) in ("", NO_REASON)
    ]
    assert unexplained == []
    # The scan saw the serving pods, and would have failed them without their annotations.
    seen = {c["resource"] for key in ("passed_checks", "skipped_checks") for c in results[key]}
    assert {f"Pod.{p['metadata']['namespace']}.{p['metadata']['name']}" for p in pods} <= seen
    # Every skip of the worker is one checkov really fails without it: no stale exception.
    expected = {check for check, _ in [*image_skips(load_profile(name).vllm.image), *SERVING, *WORKER]}
    assert {check for check, resource in failed if "bare-worker" in resource} == expected


def test_a_missing_checkov_skips_here_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(globals(), "CHECKOV", tmp_path / "absent" / "bin" / "checkov")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"bash \.ci/setup"):
        checkov()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"bash \.ci/setup"):
        checkov()
