"""Apply order and phases of the rendered set."""

from __future__ import annotations

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.rollout.order import WAITED_PHASES, apply_order, delete_order, job_role, phases


def obj(kind: str, name: str, component: str | None = None) -> dict:
    labels = {"app.kubernetes.io/component": component} if component else {}
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "labels": labels}}


SET = [
    obj("Job", "k3-smoke", "smoke"),
    obj("ServiceMonitor", "k3"),
    obj("Service", "k3"),
    obj("LeaderWorkerSet", "k3"),
    obj("Job", "k3-prefetch", "prefetch"),
    obj("PodDisruptionBudget", "k3"),
    obj("ComputeDomain", "k3-cd"),
    obj("PersistentVolumeClaim", "k3-model-cache"),
    obj("ServiceAccount", "k3"),
    obj("Namespace", "kimi"),
]


def names(objects: list[dict]) -> list[str]:
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objects]


def test_apply_order_is_dependency_order() -> None:
    assert names(apply_order(SET)) == [
        "Namespace/kimi",
        "ServiceAccount/k3",
        "PersistentVolumeClaim/k3-model-cache",
        "ComputeDomain/k3-cd",
        "Job/k3-prefetch",
        "LeaderWorkerSet/k3",
        "Service/k3",
        "PodDisruptionBudget/k3",
        "ServiceMonitor/k3",
        "Job/k3-smoke",
    ]


def test_delete_order_is_the_reverse() -> None:
    assert names(delete_order(SET)) == list(reversed(names(apply_order(SET))))


def test_phases_split_around_the_waited_jobs() -> None:
    split = {p.name: names(p.objects) for p in phases(SET)}
    assert list(split) == ["prerequisites", "prefetch", "serving", "smoke"]
    assert split["prefetch"] == ["Job/k3-prefetch"]
    assert split["serving"] == ["LeaderWorkerSet/k3", "Service/k3", "PodDisruptionBudget/k3", "ServiceMonitor/k3"]
    assert split["smoke"] == ["Job/k3-smoke"]


def test_job_role_is_the_component_label_not_the_name_and_unknown_kinds_go_after_serving() -> None:
    assert job_role(obj("Job", "x-prefetch")) is None  # a name that merely contains a role is no role
    assert job_role(obj("Job", "other", "prefetch")) == "prefetch"
    assert job_role(obj("Job", "other")) is None
    assert job_role(obj("Service", "smoke")) is None
    ordered = names(apply_order([obj("Widget", "w"), obj("LeaderWorkerSet", "k3"), obj("Job", "k3-smoke")]))
    assert ordered == ["LeaderWorkerSet/k3", "Widget/w", "Job/k3-smoke"]


def test_empty_phases_are_dropped() -> None:
    assert [p.name for p in phases([obj("Namespace", "n"), obj("LeaderWorkerSet", "k3")])] == [
        "prerequisites",
        "serving",
    ]


def test_node_preflight_job_follows_the_profile_configmap_in_its_own_waited_phase() -> None:
    objects = [*SET, obj("Job", "k3-node-preflight", "node-preflight"), obj("ConfigMap", "k3-profile")]
    assert job_role(obj("Job", "x", "node-preflight")) == "node-preflight"
    ordered = names(apply_order(objects))
    assert ordered[:6] == [
        "Namespace/kimi",
        "ServiceAccount/k3",
        "ConfigMap/k3-profile",
        "Job/k3-node-preflight",
        "PersistentVolumeClaim/k3-model-cache",
        "ComputeDomain/k3-cd",
    ]
    split = [(p.name, names(p.objects)) for p in phases(objects)]
    assert split[:4] == [
        ("prerequisites", ["Namespace/kimi", "ServiceAccount/k3", "ConfigMap/k3-profile"]),
        ("node-preflight", ["Job/k3-node-preflight"]),
        ("prerequisites", ["PersistentVolumeClaim/k3-model-cache", "ComputeDomain/k3-cd"]),
        ("prefetch", ["Job/k3-prefetch"]),
    ]
    assert [name for name, _ in split[4:]] == ["serving", "smoke"]
    assert [o for p in phases(objects) for o in p.objects] == apply_order(objects)
    assert {"node-preflight", "prefetch"} == WAITED_PHASES


def test_the_rendered_set_is_in_the_order_rollout_applies_it() -> None:
    """One encoding of the order: ranking the rendered objects leaves them where render put them."""
    objects = [m.obj for m in build(load_profile("kimi-k3-gb300-tp16"))]
    assert apply_order(list(reversed(objects))) == objects
