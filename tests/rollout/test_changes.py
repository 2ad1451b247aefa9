"""Comparison without server fields, diffs and field-manager conflicts."""

from __future__ import annotations

from k3deploy.rollout.changes import FieldConflict, conflicts, describe_conflicts, same, unified_diff

LIVE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {
        "name": "k3",
        "namespace": "ns",
        "resourceVersion": "7",
        "uid": "u",
        "generation": 1,
        "managedFields": [{"manager": "k3deploy"}],
        "creationTimestamp": "t",
    },
    "spec": {"ports": [{"port": 8000}]},
    "status": {"loadBalancer": {}},
}


def test_same_ignores_server_set_fields() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "k3", "namespace": "ns"},
        "spec": {"ports": [{"port": 8000}]},
    }
    assert same(LIVE, desired)
    assert unified_diff("ns/Service/k3", LIVE, desired) == ""


def test_unified_diff_shows_the_changed_field() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "k3", "namespace": "ns"},
        "spec": {"ports": [{"port": 9000}]},
    }
    text = unified_diff("ns/Service/k3", LIVE, desired)
    assert "--- live/ns/Service/k3" in text and "+++ applied/ns/Service/k3" in text
    assert "-  - port: 8000\n" in text and "+  - port: 9000\n" in text
    assert not same(LIVE, desired)


def test_conflicts_from_causes_and_from_the_message() -> None:
    status = {
        "code": 409,
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas',
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-edit" using apps/v1',
                    "field": ".spec.replicas",
                }
            ]
        },
    }
    assert conflicts(status) == [FieldConflict("kubectl-edit", ".spec.replicas")]
    assert conflicts({"message": status["message"]}) == [FieldConflict("kubectl-edit", ".spec.replicas")]
    assert describe_conflicts("ns/LeaderWorkerSet/k3", conflicts(status)) == (
        "apply ns/LeaderWorkerSet/k3: conflict with another field manager: .spec.replicas (owned by 'kubectl-edit')"
    )
