"""Every rendered pod judged by the Pod Security Standards, rule by rule.

The rules are those of https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the "Baseline" and
"Restricted" tables, as enforced by Pod Security Admission, kubernetes/pod-security-admission policy/check_*.go):
each rule is one function returning what it finds wrong with a pod spec, and one test case per rule and pod.
"Containers" there means containers, initContainers and ephemeralContainers.

Levels asserted: k3deploy's own Jobs (smoke, prefetch, node-preflight) meet restricted; the serving pods (LWS
leader and worker templates) meet baseline and every restricted rule except running as non-root, because the
vllm/vllm-openai image runs as root (see templates/leaderworkerset.yaml.j2).
"""

from __future__ import annotations

import pytest

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.manifests import build
from k3deploy.render.pod_security import (
    BASELINE,
    RESTRICTED,
    Pod,
    Rule,
    all_containers,
    baseline_capabilities,
    baseline_seccomp,
    check,
    host_namespaces,
    host_path_volumes,
    host_ports,
    host_probes,
    pod_templates,
    privilege_escalation,
    privileged,
    proc_mount,
    restricted_capabilities,
    restricted_seccomp,
    run_as_non_root,
    run_as_user,
    security_context,
    selinux,
    sysctls,
    volume_types,
)

# What the serving pods may not meet of restricted, and why: templates/leaderworkerset.yaml.j2.
SERVING_EXCEPTIONS = {"run-as-non-root"}
# What a kubernetes.host_vllm rehearsal's serving pods may not meet, and why: they mount the nodes' vLLM environment
# and model by hostPath (outside baseline; the profile must say pod_security_level privileged, the model refuses it
# otherwise).
HOST_VLLM_EXCEPTIONS = {"host-path-volumes", "volume-types"}
HOST_VLLM = {name for name in builtin_names() if load_profile(name).kubernetes.host_vllm is not None}


def _excepted(where: str, rule: str) -> bool:
    """Whether `rule` is one the pod at `where` does not meet by design."""
    serving = where.endswith(("/leaderTemplate", "/workerTemplate"))
    if serving and where.split("/", 1)[0] in HOST_VLLM and rule in HOST_VLLM_EXCEPTIONS:
        return True
    return serving and rule in SERVING_EXCEPTIONS


def _pods() -> list[tuple[str, Pod, dict[str, str]]]:
    """(profile/kind/name[/role], pod spec, pod annotations) of every pod each built-in kubernetes profile renders."""
    return [
        (f"{name}/{where}", pod, annotations)
        for name in builtin_names()
        if load_profile(name).target == "kubernetes"
        for where, pod, annotations in pod_templates([m.obj for m in build(load_profile(name))])
    ]


PODS = _pods()
POD_IDS = [where for where, _, _ in PODS]


def test_every_kind_of_pod_is_judged() -> None:
    kinds = {where.split("/", 2)[2] for where in POD_IDS}
    assert any(k.endswith("-smoke") for k in kinds) and any("-prefetch-" in k for k in kinds)
    assert any(k.endswith("-node-preflight") for k in kinds)
    assert sum(k.endswith(("/leaderTemplate", "/workerTemplate")) for k in kinds) >= 2


@pytest.mark.parametrize("rule", BASELINE, ids=list(BASELINE))
@pytest.mark.parametrize(("where", "pod", "annotations"), PODS, ids=POD_IDS)
def test_baseline(rule: str, where: str, pod: Pod, annotations: dict[str, str]) -> None:
    found = check(BASELINE[rule], pod, annotations)
    if _excepted(where, rule):
        assert found and load_profile(where.split("/", 1)[0]).kubernetes.pod_security_level == "privileged", where
    else:
        assert found == [], where


@pytest.mark.parametrize("rule", RESTRICTED, ids=list(RESTRICTED))
@pytest.mark.parametrize(("where", "pod", "annotations"), PODS, ids=POD_IDS)
def test_restricted(rule: str, where: str, pod: Pod, annotations: dict[str, str]) -> None:
    found = check(RESTRICTED[rule], pod, annotations)
    if _excepted(where, rule):
        assert found, f"{where}: {rule} now holds; drop it from the exceptions"
    else:
        assert found == [], where


@pytest.mark.parametrize(
    ("where", "pod", "annotations"), [p for p in PODS if "/Job/" in p[0]], ids=[w for w in POD_IDS if "/Job/" in w]
)
def test_jobs_read_only_root_with_limits(where: str, pod: Pod, annotations: dict[str, str]) -> None:
    """Beyond the standard: k3deploy's Jobs have a read-only root, explicit writable mounts, requests and a memory
    limit, a fixed UID/GID, and no ServiceAccount token except the smoke Job's with smoke.gate_traffic, which labels
    the leaders it gated through the API, as its own account (templates/smoke-role.yaml.j2)."""
    gates = where.endswith("-smoke") and "--gate-leaders" in pod["containers"][0]["args"]
    assert pod["automountServiceAccountToken"] is gates, where
    assert str(pod.get("serviceAccountName")).endswith("-smoke-gate") is gates, where
    assert security_context(pod)["runAsUser"] == security_context(pod)["runAsGroup"] != 0, where
    for c in all_containers(pod):
        assert security_context(c)["readOnlyRootFilesystem"] is True, where
        assert "/tmp" in {m["mountPath"] for m in c.get("volumeMounts") or []}, where
        assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and "memory" in c["resources"]["limits"], where


# --- the rules themselves refuse what the documentation forbids ------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "pod"),
    [
        (host_namespaces, {"hostPID": True}),
        (privileged, {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}),
        (
            baseline_capabilities,
            {"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]},
        ),
        (host_path_volumes, {"volumes": [{"name": "v", "hostPath": {"path": "/"}}]}),
        (host_ports, {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
        (host_probes, {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 1}}}]}),
        (selinux, {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
        (proc_mount, {"containers": [{"name": "c", "securityContext": {"procMount": "Unmasked"}}]}),
        (baseline_seccomp, {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
        (sysctls, {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}),
        (volume_types, {"volumes": [{"name": "v", "nfs": {"server": "s", "path": "/"}}]}),
        (privilege_escalation, {"containers": [{"name": "c"}]}),
        (run_as_non_root, {"containers": [{"name": "c"}]}),
        (run_as_user, {"securityContext": {"runAsUser": 0}}),
        (restricted_seccomp, {"containers": [{"name": "c"}]}),
        (
            restricted_capabilities,
            {"containers": [{"name": "c", "securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}]},
        ),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_each_rule_refuses_a_violation(rule: Rule, pod: Pod) -> None:
    assert rule(pod)


def test_prefetch_owns_the_cache_it_fills_without_walking_it_each_start() -> None:
    """Non-root, the prefetch writes the weight cache through its fsGroup; OnRootMismatch spares a recursive
    relabel of ~1.5 TB on every start."""
    pods = [pod for where, pod, _ in PODS if "-prefetch-" in where]
    assert pods
    for pod in pods:
        assert security_context(pod)["fsGroup"] == security_context(pod)["runAsGroup"]
        assert security_context(pod)["fsGroupChangePolicy"] == "OnRootMismatch"
