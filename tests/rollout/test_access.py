"""Preflight's access review is derived from the rendered set and the plan: every kind of the set gets its apply and
delete verbs, each step its plan may run brings what it reads and writes, and an object added to the set or a step
added to the plan adds its verbs."""

from __future__ import annotations

import typing

import pytest

from k3deploy.preflight.access import Access, plural
from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.rollout.access import command_access, required_access, step_access
from k3deploy.rollout.plan import UP_STRATEGY, Strategy, reachable
from k3deploy.rollout.steps import (
    Apply,
    ApplyAll,
    Begin,
    Delete,
    Diff,
    DownAll,
    GateLeaders,
    Guard,
    Note,
    RecordGate,
    RecordRevision,
    Remove,
    RemoveLeftovers,
    Restore,
    RollbackAll,
    SmokeGroup,
    Step,
    Switch,
    Wait,
    WaitAll,
    WaitGone,
    WaitGroup,
)

K3 = "kimi-k3-gb300-tp16"


def _verbs(objects: list[dict], resource: str, group: str) -> set[str]:
    return {a.verb for a in command_access(objects) if (a.resource, a.group, a.subresource) == (resource, group, "")}


def test_every_kind_of_the_set_is_reviewed_with_its_apply_and_delete_verbs() -> None:
    objects = rendered_objects(load_profile(K3))
    reviewed = {(a.resource, a.group) for a in command_access(objects)}
    for obj in objects:
        if obj["kind"] == "Namespace":  # reviewed apart: its create only when it does not exist yet
            continue
        key = (plural(obj["kind"]), obj["apiVersion"].rpartition("/")[0])
        assert key in reviewed, obj["kind"]
        assert {"get", "create", "patch", "delete"} <= _verbs(objects, *key)


def test_the_pod_disruption_budget_of_the_set_is_reviewed() -> None:
    """The PDB `up` applies (and `down` deletes) is asked about: no preflight pass then a 403 halfway through."""
    objects = rendered_objects(load_profile(K3))
    assert any(o["kind"] == "PodDisruptionBudget" for o in objects)
    assert _verbs(objects, "poddisruptionbudgets", "policy") == {"get", "create", "patch", "delete"}


def test_an_object_added_to_the_set_adds_its_verbs() -> None:
    objects = [o for o in rendered_objects(load_profile(K3)) if o["kind"] != "PodDisruptionBudget"]
    assert _verbs(objects, "poddisruptionbudgets", "policy") == set()
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "ns"}}
    before, after = command_access(objects), command_access([*objects, pdb])
    assert set(after) - set(before) == {
        Access(v, "poddisruptionbudgets", "policy") for v in ("get", "create", "patch", "delete")
    }


def test_waited_kinds_are_listed_and_watched_and_a_leader_worker_set_brings_its_revisions() -> None:
    objects = rendered_objects(load_profile(K3))
    assert {"list", "watch"} <= _verbs(objects, "leaderworkersets", "leaderworkerset.x-k8s.io")
    assert {"list", "watch"} <= _verbs(objects, "jobs", "batch")
    assert _verbs(objects, "controllerrevisions", "apps") == {"list", "watch"}
    assert not {"list", "watch"} & _verbs(objects, "services", "")
    without_lws = [o for o in objects if o["kind"] != "LeaderWorkerSet"]
    assert _verbs(without_lws, "controllerrevisions", "apps") == set()


def test_switching_a_feature_off_drops_its_kinds_and_routing_adds_its_own() -> None:
    off = {a.resource for a in command_access(rendered_objects(load_profile(K3, ["kubernetes.monitoring=false"])))}
    assert "prometheusrules" not in off
    pool = load_profile(K3, ["kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"])
    resources = {(a.resource, a.group) for a in command_access(rendered_objects(pool))}
    assert {("inferencepools", "inference.networking.k8s.io"), ("deployments", "apps")} <= resources
    assert {("roles", "rbac.authorization.k8s.io"), ("rolebindings", "rbac.authorization.k8s.io")} <= resources


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("NetworkPolicy", "networkpolicies"),
        ("PodDisruptionBudget", "poddisruptionbudgets"),
        ("Ingress", "ingresses"),
        ("LeaderWorkerSet", "leaderworkersets"),
        ("ConfigMap", "configmaps"),
    ],
)
def test_plural_follows_the_rest_mappers_guess(kind: str, resource: str) -> None:
    assert plural(kind) == resource


def test_waited_pods_that_mount_a_claim_bring_the_claims_their_classes_and_their_events() -> None:
    """The waiter judges a pod held for an unbound claim by the claim, its StorageClass (cluster-wide) and the claim's
    events (rollout/claims.py): preflight asks for every read that needs."""
    objects = rendered_objects(load_profile(K3))
    needed = {
        Access("list", "persistentvolumeclaims"),
        Access("watch", "persistentvolumeclaims"),
        Access("list", "storageclasses", "storage.k8s.io", namespaced=False),
        Access("watch", "storageclasses", "storage.k8s.io", namespaced=False),
        Access("list", "events"),
        Access("watch", "events"),
    }
    assert needed <= set(command_access(objects))
    # Without a waited object whose pods mount a claim (the claim alone is applied, never waited on), none of it.
    unmounted = [o for o in objects if o["kind"] not in ("LeaderWorkerSet", "Job")]
    assert any(o["kind"] == "PersistentVolumeClaim" for o in unmounted)
    assert not {a for a in needed if a.verb == "watch"} & set(command_access(unmounted))
    assert Access("list", "storageclasses", "storage.k8s.io", namespaced=False) not in command_access(unmounted)


ENDPOINT_SLICES = Access("list", "endpointslices", "discovery.k8s.io")


def test_a_blue_green_plan_brings_the_endpoint_slices_its_switch_lists() -> None:
    """The switch waits until the Service's EndpointSlices list the new leader: only a blue-green plan asks for it."""
    objects = rendered_objects(load_profile(K3))
    assert ENDPOINT_SLICES not in command_access(objects)
    assert ENDPOINT_SLICES in command_access(objects, Strategy("blue-green", group_smoke=True))
    # A blue-green of a dry run switches nothing.
    assert ENDPOINT_SLICES not in command_access(objects, Strategy("blue-green", dry_run=True))


def test_a_step_added_to_the_plan_adds_its_verbs() -> None:
    objects = rendered_objects(load_profile(K3))
    steps = reachable(objects, UP_STRATEGY, "kimi-k3-gb300-tp16")
    before = required_access(objects, steps)
    after = required_access(objects, [*steps, Switch(None, "g", "g-0")])
    assert set(after) - set(before) == {ENDPOINT_SLICES}


def test_recording_a_revision_writes_its_config_map_whatever_the_set_holds() -> None:
    objects = [o for o in rendered_objects(load_profile(K3)) if o["kind"] != "ConfigMap"]
    assert not any(a.resource == "configmaps" for a in required_access(objects))
    record = required_access(objects, [RecordRevision(objects)])
    assert {a.verb for a in record if a.resource == "configmaps"} == {"get", "create", "patch"}


def test_the_wait_verbs_come_from_the_plans_wait_steps() -> None:
    """Nothing waits in `apply --no-wait`: no list or watch of what it applies (the Lease and apply verbs remain)."""
    objects = rendered_objects(load_profile(K3))
    unwaited = {a.verb for a in command_access(objects, Strategy(wait=False)) if a.resource == "leaderworkersets"}
    assert unwaited == {"get", "create", "patch", "delete"}
    assert {"list", "watch"} <= _verbs(objects, "leaderworkersets", "leaderworkerset.x-k8s.io")


def _samples() -> list[Step]:
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "k"}}
    return [
        Begin("apply"),
        Note("x"),
        Apply([lws]),
        Diff([lws]),
        Wait([lws]),
        WaitGroup(lws, 0),
        SmokeGroup("k", 0, "x"),
        GateLeaders("k", smoke=True),
        RecordGate(lws, None),
        Switch(None, "k", "k-0"),
        Delete("v1", "Service", "k"),
        WaitGone("k"),
        RemoveLeftovers([lws], None),
        RecordRevision([lws]),
        ApplyAll(),
        WaitAll(),
        Restore([lws]),
        Remove([lws], frozenset()),
        Guard([lws], []),
        RollbackAll(None),
        DownAll([lws], purge=True),
    ]


def test_every_step_type_of_the_plan_has_its_access_and_an_unknown_one_is_refused() -> None:
    samples = _samples()
    assert {type(s) for s in samples} == set(typing.get_args(Step))
    for step in samples:
        step_access(step)  # raises for a step it does not know
    with pytest.raises(TypeError, match="no access is known"):
        step_access(object())  # type: ignore[arg-type]


PORT_FORWARD = {Access("get", "pods", subresource="portforward"), Access("create", "pods", subresource="portforward")}


def test_a_smoke_through_a_port_forward_brings_its_verbs_and_an_in_cluster_one_its_job() -> None:
    """The final smoke and a group's gate reach the leader through the API server (`get` and, from 1.35, `create`
    on pods/portforward) unless the smoke runs as a Job inside the cluster (its create, get and delete)."""
    objects = rendered_objects(load_profile(K3))
    assert not PORT_FORWARD & set(command_access(objects))
    assert set(command_access(objects, port_forward=True)) >= PORT_FORWARD
    gate = SmokeGroup("k", 0, "x")
    forwarded, in_cluster = set(step_access(gate, port_forward=True)), set(step_access(gate))
    assert forwarded >= PORT_FORWARD and Access("get", "services") in forwarded
    assert not PORT_FORWARD & in_cluster
    assert {Access(v, "jobs", "batch") for v in ("get", "create", "delete")} <= in_cluster
    assert not any(a.resource == "jobs" for a in forwarded)
    assert not PORT_FORWARD & set(required_access(objects, [gate]))
    assert set(required_access(objects, [gate], port_forward=True)) >= PORT_FORWARD


def test_the_rollbacks_steps_are_reviewed_too() -> None:
    """`up` rolls back a failed first install by deleting what it applied and the revision history: a set with no
    ConfigMap of its own still needs the history's delete, and a removal that deletes a Namespace needs to list what
    it holds; `apply --no-wait` never rolls back, so it asks for neither."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "k"}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "k"}}
    waited = {(a.verb, a.resource) for a in command_access([ns, job])}
    assert {("delete", "configmaps"), ("get", "configmaps")} <= waited
    unwaited = {(a.verb, a.resource) for a in command_access([ns, job], Strategy(wait=False))}
    assert ("delete", "configmaps") not in unwaited
    assert not {("list", "secrets")} & waited  # a rollback keeps the Namespace
    assert {("list", "secrets"), ("list", "configmaps")} <= {
        (a.verb, a.resource) for a in step_access(Remove([ns], frozenset()))
    }


def test_a_restore_applies_and_a_guard_dry_runs_only_the_leaderworkerset() -> None:
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "k"}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "k"}}
    applied = {(a.verb, a.resource) for a in step_access(Restore([lws, svc]))}
    assert applied == {(v, r) for v in ("get", "create", "patch", "delete") for r in ("leaderworkersets", "services")}
    guarded = {(a.verb, a.resource, a.group) for a in step_access(Guard([lws, svc], [svc]))}
    assert guarded == {
        (v, "leaderworkersets", "leaderworkerset.x-k8s.io") for v in ("get", "create", "patch", "delete")
    }
    kept = step_access(Remove([lws, svc], frozenset({"Service"})))
    assert {(a.verb, a.resource) for a in kept} == {("get", "leaderworkersets"), ("delete", "leaderworkersets")}


def test_marking_gated_leaders_asks_to_patch_pods_only_when_the_service_selects_the_mark() -> None:
    """A passed gate labels the leader it judged (targets/kubernetes/marks.py): a deployer who may not patch pods
    would pass preflight and then leave every new leader out of traffic."""
    gated = rendered_objects(load_profile(K3))
    assert {("get", ""), ("patch", "")} <= {
        (a.verb, a.subresource) for a in command_access(gated) if a.resource == "pods"
    }
    ungated = rendered_objects(load_profile(K3, ["smoke.gate_traffic=false"]))
    assert not any(a.verb == "patch" and a.resource == "pods" for a in command_access(ungated))
