"""The Flux health check expressions for LeaderWorkerSet, evaluated by a real CEL interpreter (cel-python).

kustomize-controller (docs/spec/v1/kustomizations.md, "Health check expressions") passes the object's
top-level fields to each expression and evaluates `inProgress`, then `failed`, then `current`; the first
true one decides. They must agree with the Argo CD check on every controller-shaped status.
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.gitops.test_argocd_health import condition, health, lws

KUSTOMIZATION = REPO_ROOT / "gitops" / "flux" / "kustomization.yaml"


def flux_status(obj: dict[str, Any]) -> str:
    """Current / InProgress / Failed as kustomize-controller decides it; an evaluation error means waiting."""
    serving = [d for d in yaml.safe_load_all(KUSTOMIZATION.read_text()) if d["metadata"]["name"].endswith("-serving")]
    [check] = serving[0]["spec"]["healthCheckExprs"]
    assert (check["apiVersion"], check["kind"]) == ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    env = celpy.Environment()
    activation = celpy.json_to_cel(obj)
    for key, verdict in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if key not in check:
            continue
        result = env.program(env.compile(check[key])).evaluate(activation)
        if isinstance(result, celpy.CELEvalError):
            return "InProgress"
        if result:
            return verdict
    return "InProgress"


CASES = {
    "starting": lws(
        1, {"replicas": 1, "updatedReplicas": 1, "observedGeneration": 1, "conditions": [condition("Progressing", 1)]}
    ),
    "available": lws(
        3,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 3,
            "conditions": [condition("Progressing", 3, status="False"), condition("Available", 3)],
        },
    ),
    "stale": lws(
        4,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 3,
            "conditions": [condition("Available", 3)],
        },
    ),
    "updating": lws(
        2,
        {
            "replicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 2,
            "conditions": [condition("UpdateInProgress", 2), condition("Progressing", 2)],
        },
    ),
    "surplus": lws(
        5,
        {
            "replicas": 2,
            "updatedReplicas": 1,
            "readyReplicas": 2,
            "observedGeneration": 5,
            "conditions": [condition("Available", 5)],
        },
    ),
    "old-lws-updated": lws(
        2,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 2,
            "conditions": [condition("Available", 2)],
        },
        observed=False,
    ),
    "old-lws-not-updated": lws(
        2,
        {"replicas": 1, "readyReplicas": 1, "observedGeneration": 2, "conditions": [condition("Available", 2)]},
        observed=False,
    ),
    "no-status": lws(1, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_flux_and_argocd_agree(name: str) -> None:
    obj = CASES[name]
    expected = "Current" if health(obj)["status"] == "Healthy" else "InProgress"
    assert flux_status(obj) == expected


def test_only_the_available_case_is_current() -> None:
    assert [name for name, obj in CASES.items() if flux_status(obj) == "Current"] == ["available", "old-lws-updated"]
