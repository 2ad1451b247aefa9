"""Argo CD syncs every rendered set without waiting on an object that does not exist yet (first sync included).

The order model and its sources (argoproj/gitops-engine pkg/sync/sync_tasks.go, sync_context.go,
pkg/health/health_pvc.go) are in tests/render/argocd_order.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.manifests import build
from tests.render.argocd_order import WAVE, check, needs, schedule
from tests.render.sets import builtin_prefetch, prefetch_name

K3 = "kimi-k3-gb300-tp16"
PREFETCH = builtin_prefetch(K3)
KUBE_PROFILES = [name for name in builtin_names() if load_profile(name).target == "kubernetes"]
VARIANTS = [
    [],
    ["kubernetes.node_preflight_job=false"],
    ["kubernetes.compute_domain=false", "kubernetes.service_monitor=false"],
    ["kubernetes.hf_token_secret=null"],
    ["kubernetes.guard=true"],
    ["kubernetes.node_preflight_hosts=[gb300-a,gb300-b,gb300-c,gb300-d,gb300-e]"],
    ["parallel.replicas=2", "kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"],
]


def _objects(name: str, sets: list[str]) -> list[dict[str, Any]]:
    return [m.obj for m in build(load_profile(name, sets))]


def _external(name: str, sets: list[str]) -> set[tuple[str, str]]:
    """What the set may use without creating it: the Hugging Face token Secret the cluster preflight checks."""
    ref = load_profile(name, sets).kubernetes.hf_token_secret
    return {("Secret", ref.name)} if ref is not None else set()


@pytest.mark.parametrize("sets", VARIANTS, ids=lambda sets: ",".join(sets) or "default")
@pytest.mark.parametrize("name", KUBE_PROFILES)
def test_every_need_is_created_in_an_earlier_phase_wave_or_kind(name: str, sets: list[str]) -> None:
    problems = check(_objects(name, sets), _external(name, sets))
    assert not problems, "\n".join(map(str, problems))


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def test_the_prefetch_job_would_deadlock_with_its_service_account_in_wave_0() -> None:
    # The set as it was: the ServiceAccount without a wave (0), the prefetch Job a Sync hook in wave -1.
    objects = copy.deepcopy(_objects(K3, []))
    account = next(o for o in objects if o["kind"] == "ServiceAccount")
    del account["metadata"]["annotations"][WAVE]
    problems = [str(p) for p in check(objects, _external(K3, []))]
    assert problems == [f"Job/{PREFETCH} needs ServiceAccount/k3deploy: created at step/kind (3, 1), not before (2, 5)"]


def test_a_pvc_a_wave_before_its_first_consumer_would_never_bind_with_wait_for_first_consumer() -> None:
    objects = copy.deepcopy(_objects(K3, []))
    pvc = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    pvc["metadata"]["annotations"][WAVE] = "-2"
    problems = [str(p) for p in check(objects, _external(K3, []))]
    assert len(problems) == 1 and "WaitForFirstConsumer" in problems[0] and f"{K3}-model-cache" in problems[0]


def test_a_secret_outside_the_set_is_a_problem_unless_declared_external() -> None:
    # The Hub token's volume is optional (Kimi K3 is public): only a Secret a pod cannot start without counts.
    assert check(_objects(K3, [])) == []
    objects = _objects(K3, ['kubernetes.image_pull_secrets=["mirror-pull"]'])
    assert f"Job/{prefetch_name(objects)} needs Secret/mirror-pull: not in the set and not provided outside it" in [
        str(p) for p in check(objects)
    ]


def test_order_follows_gitops_engine() -> None:
    """Where the set's own annotations put its objects in Argo CD's order. Each rendered object is scheduled once;
    an object added to the set needs no edit here (the test above holds what it needs to exist first)."""
    order = [(t.phase, t.wave, _key(t.obj)) for t in schedule(_objects(K3, []))]
    keys = [key for _, _, key in order]
    assert sorted(keys) == sorted(_key(o) for o in _objects(K3, []))
    step = {key: (phase, wave) for phase, wave, key in order}
    # The Namespace is moved in front of the first object in it (adjustDeps), into PreSync; the node-preflight Job
    # and the profile it reads run before anything is synced.
    assert keys[0] == "Namespace/kimi-k3" and step[keys[0]] == ("PreSync", -1)
    assert step[f"ConfigMap/{K3}-profile"] == ("PreSync", -1) and step[f"Job/{K3}-node-preflight"] == ("PreSync", 0)
    # The NetworkPolicies in wave -1: in place before the first pod of the Sync phase (the prefetch), as are its
    # identity and its claim.
    first_pod = keys.index(f"Job/{PREFETCH}")
    before = [k for k in keys if k.split("/")[0] in ("NetworkPolicy", "ServiceAccount", "PersistentVolumeClaim")]
    assert len(before) >= 3 and all(step[k] == ("Sync", -1) and keys.index(k) < first_pod for k in before)
    # Custom resources rank after every known kind of their step, then by name: the ComputeDomain after the prefetch.
    assert step[f"ComputeDomain/{K3}-compute-domain"] == ("Sync", -1)
    assert keys.index(f"ComputeDomain/{K3}-compute-domain") > first_pod
    # The serving group in wave 0, after the wave that loads its weights; the smoke Job last, after the sync.
    assert step[f"LeaderWorkerSet/{K3}"] == ("Sync", 0) and keys.index(f"LeaderWorkerSet/{K3}") > first_pod
    assert keys[-1] == f"Job/{K3}-smoke" and step[keys[-1]] == ("PostSync", 0)


def test_serving_pods_need_no_secret() -> None:
    # They run with HF_HUB_OFFLINE=1: only the prefetch Job downloads, so only it reads the token.
    objects = {_key(o): o for o in _objects(K3, [])}
    assert not [n for n in needs(objects[f"LeaderWorkerSet/{K3}"]) if n[0] == "Secret"]
    # The prefetch mounts the token optionally: it starts without the Secret (anonymous download).
    volume = next(v for v in objects[f"Job/{PREFETCH}"]["spec"]["template"]["spec"]["volumes"] if "secret" in v)
    assert volume["secret"] == {**volume["secret"], "secretName": "hf-token", "optional": True}
    assert ("Secret", "hf-token") not in needs(objects[f"Job/{PREFETCH}"])
