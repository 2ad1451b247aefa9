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

from collections.abc import Callable
from typing import Any

import pytest

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.manifests import build

Pod = dict[str, Any]
Rule = Callable[[Pod], list[str]]


def _containers(pod: Pod) -> list[dict[str, Any]]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in pod.get(key) or []]


def _sc(node: dict[str, Any]) -> dict[str, Any]:
    return node.get("securityContext") or {}


def _both(pod: Pod) -> list[tuple[str, dict[str, Any]]]:
    """The pod's securityContext and each container's, with a name for the message."""
    return [("pod", _sc(pod))] + [(c["name"], _sc(c)) for c in _containers(pod)]


# --- Baseline -------------------------------------------------------------------------------------------------

def host_process(pod: Pod) -> list[str]:
    """HostProcess: securityContext.windowsOptions.hostProcess undefined or false."""
    return [f"{who}: hostProcess" for who, sc in _both(pod) if (sc.get("windowsOptions") or {}).get("hostProcess")]


def host_namespaces(pod: Pod) -> list[str]:
    """Host Namespaces: spec.hostNetwork, hostPID, hostIPC undefined or false."""
    return [key for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]


def privileged(pod: Pod) -> list[str]:
    """Privileged Containers: securityContext.privileged undefined or false."""
    return [f"{c['name']}: privileged" for c in _containers(pod) if _sc(c).get("privileged")]


BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                         "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}


def baseline_capabilities(pod: Pod) -> list[str]:
    """Capabilities: capabilities.add undefined or within the baseline set."""
    return [f"{c['name']}: adds {cap}" for c in _containers(pod)
            for cap in (_sc(c).get("capabilities") or {}).get("add") or [] if cap not in BASELINE_CAPABILITIES]


def host_path_volumes(pod: Pod) -> list[str]:
    """HostPath Volumes: no hostPath volume."""
    return [f"volume {v['name']}: hostPath" for v in pod.get("volumes") or [] if "hostPath" in v]


def host_ports(pod: Pod) -> list[str]:
    """Host Ports: ports[*].hostPort undefined or 0."""
    return [f"{c['name']}: hostPort {p['hostPort']}" for c in _containers(pod) for p in c.get("ports") or [] if p.get("hostPort")]


def host_probes(pod: Pod) -> list[str]:
    """Host Probes / Lifecycle Hooks: probes' and lifecycle handlers' httpGet.host / tcpSocket.host unset or ""."""
    handlers = [(c["name"], c.get(key)) for c in _containers(pod)
                for key in ("livenessProbe", "readinessProbe", "startupProbe")]
    handlers += [(c["name"], hook) for c in _containers(pod) for hook in (c.get("lifecycle") or {}).values()]
    return [f"{name}: {kind}.host" for name, handler in handlers if handler
            for kind in ("httpGet", "tcpSocket") if (handler.get(kind) or {}).get("host")]


def app_armor(pod: Pod, annotations: dict[str, str] | None = None) -> list[str]:
    """AppArmor: appArmorProfile.type undefined, RuntimeDefault or Localhost (and the beta annotation likewise)."""
    bad = [f"{who}: appArmor {sc['appArmorProfile']['type']}" for who, sc in _both(pod)
           if "appArmorProfile" in sc and sc["appArmorProfile"].get("type") not in ("RuntimeDefault", "Localhost")]
    return bad + [key for key, value in (annotations or {}).items()
                  if key.startswith("container.apparmor.security.beta.kubernetes.io/")
                  and value != "runtime/default" and not value.startswith("localhost/")]


SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def selinux(pod: Pod) -> list[str]:
    """SELinux: seLinuxOptions.type among the container types; user and role unset."""
    bad = []
    for who, sc in _both(pod):
        options = sc.get("seLinuxOptions") or {}
        if options.get("type", "") not in SELINUX_TYPES or options.get("user") or options.get("role"):
            bad.append(f"{who}: seLinuxOptions {options}")
    return bad


def proc_mount(pod: Pod) -> list[str]:
    """/proc Mount Type: procMount undefined or Default."""
    return [f"{c['name']}: procMount" for c in _containers(pod) if _sc(c).get("procMount", "Default") != "Default"]


def baseline_seccomp(pod: Pod) -> list[str]:
    """Seccomp (baseline): seccompProfile.type undefined, RuntimeDefault or Localhost (never Unconfined)."""
    return [f"{who}: seccomp {sc['seccompProfile'].get('type')}" for who, sc in _both(pod)
            if "seccompProfile" in sc and sc["seccompProfile"].get("type") not in ("RuntimeDefault", "Localhost")]


SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}


def sysctls(pod: Pod) -> list[str]:
    """Sysctls: only the safe set."""
    return [s["name"] for s in _sc(pod).get("sysctls") or [] if s["name"] not in SAFE_SYSCTLS]


BASELINE: dict[str, Rule] = {
    "host-process": host_process, "host-namespaces": host_namespaces, "privileged": privileged,
    "capabilities": baseline_capabilities, "host-path-volumes": host_path_volumes, "host-ports": host_ports,
    "host-probes": host_probes, "app-armor": app_armor, "selinux": selinux, "proc-mount": proc_mount,
    "seccomp": baseline_seccomp, "sysctls": sysctls,
}


# --- Restricted (on top of baseline) --------------------------------------------------------------------------

RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}


def volume_types(pod: Pod) -> list[str]:
    """Volume Types: only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret."""
    return [f"volume {v['name']}: {kinds}" for v in pod.get("volumes") or []
            if (kinds := set(v) - {"name"}) - RESTRICTED_VOLUMES]


def privilege_escalation(pod: Pod) -> list[str]:
    """Privilege Escalation: allowPrivilegeEscalation must be false on every container."""
    return [c["name"] for c in _containers(pod) if _sc(c).get("allowPrivilegeEscalation") is not False]


def run_as_non_root(pod: Pod) -> list[str]:
    """Running as Non-root: runAsNonRoot true on the pod, or on every container (none may set it false)."""
    pod_level = _sc(pod).get("runAsNonRoot")
    bad = ["pod: runAsNonRoot false"] if pod_level is False else []
    for c in _containers(pod):
        level = _sc(c).get("runAsNonRoot")
        if level is False or (level is None and pod_level is not True):
            bad.append(f"{c['name']}: runAsNonRoot not true")
    return bad


def run_as_user(pod: Pod) -> list[str]:
    """Running as Non-root user: runAsUser undefined or non-zero."""
    return [f"{who}: runAsUser 0" for who, sc in _both(pod) if sc.get("runAsUser") == 0]


def restricted_seccomp(pod: Pod) -> list[str]:
    """Seccomp (restricted): RuntimeDefault or Localhost on the pod, or on every container."""
    allowed = ("RuntimeDefault", "Localhost")
    pod_set = (_sc(pod).get("seccompProfile") or {}).get("type") in allowed
    bad = baseline_seccomp(pod)
    return bad + [f"{c['name']}: no seccomp profile" for c in _containers(pod)
                  if not pod_set and (_sc(c).get("seccompProfile") or {}).get("type") not in allowed]


def restricted_capabilities(pod: Pod) -> list[str]:
    """Capabilities (restricted): drop ALL; add only NET_BIND_SERVICE."""
    bad = []
    for c in _containers(pod):
        caps = _sc(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            bad.append(f"{c['name']}: does not drop ALL")
        bad += [f"{c['name']}: adds {cap}" for cap in caps.get("add") or [] if cap != "NET_BIND_SERVICE"]
    return bad


RESTRICTED: dict[str, Rule] = {
    "volume-types": volume_types, "privilege-escalation": privilege_escalation, "run-as-non-root": run_as_non_root,
    "run-as-user": run_as_user, "seccomp-restricted": restricted_seccomp, "capabilities-restricted": restricted_capabilities,
}

# What the serving pods may not meet of restricted, and why: templates/leaderworkerset.yaml.j2.
SERVING_EXCEPTIONS = {"run-as-non-root"}


def _pods() -> list[tuple[str, Pod, dict[str, str]]]:
    """(profile/kind/name[/role], pod spec, pod annotations) of every pod each built-in kubernetes profile renders."""
    pods = []
    for name in builtin_names():
        profile = load_profile(name)
        if profile.target != "kubernetes":
            continue
        for manifest in build(profile):
            obj = manifest.obj
            where = f"{name}/{obj['kind']}/{obj['metadata']['name']}"
            if obj["kind"] == "Job":
                template = obj["spec"]["template"]
                pods.append((where, template["spec"], (template.get("metadata") or {}).get("annotations") or {}))
            elif obj["kind"] == "LeaderWorkerSet":
                lws = obj["spec"]["leaderWorkerTemplate"]
                for role in ("leaderTemplate", "workerTemplate"):
                    pods.append((f"{where}/{role}", lws[role]["spec"], (lws[role].get("metadata") or {}).get("annotations") or {}))
    return pods


PODS = _pods()
POD_IDS = [where for where, _, _ in PODS]


def _check(rule: Rule, pod: Pod, annotations: dict[str, str]) -> list[str]:
    return rule(pod, annotations) if rule is app_armor else rule(pod)  # type: ignore[call-arg]


def test_every_kind_of_pod_is_judged() -> None:
    kinds = {where.split("/", 2)[2] for where in POD_IDS}
    assert any(k.endswith("-smoke") for k in kinds) and any(k.endswith("-prefetch") for k in kinds)
    assert any(k.endswith("-node-preflight") for k in kinds)
    assert sum(k.endswith(("/leaderTemplate", "/workerTemplate")) for k in kinds) >= 2


@pytest.mark.parametrize("rule", BASELINE, ids=list(BASELINE))
@pytest.mark.parametrize(("where", "pod", "annotations"), PODS, ids=POD_IDS)
def test_baseline(rule: str, where: str, pod: Pod, annotations: dict[str, str]) -> None:
    assert _check(BASELINE[rule], pod, annotations) == [], where


@pytest.mark.parametrize("rule", RESTRICTED, ids=list(RESTRICTED))
@pytest.mark.parametrize(("where", "pod", "annotations"), PODS, ids=POD_IDS)
def test_restricted(rule: str, where: str, pod: Pod, annotations: dict[str, str]) -> None:
    found = _check(RESTRICTED[rule], pod, annotations)
    serving = where.endswith(("/leaderTemplate", "/workerTemplate"))
    if serving and rule in SERVING_EXCEPTIONS:
        assert found, f"{where}: {rule} now holds; drop it from SERVING_EXCEPTIONS"
    else:
        assert found == [], where


@pytest.mark.parametrize(("where", "pod", "annotations"), [p for p in PODS if "/Job/" in p[0]],
                         ids=[w for w in POD_IDS if "/Job/" in w])
def test_jobs_read_only_root_with_limits(where: str, pod: Pod, annotations: dict[str, str]) -> None:
    """Beyond the standard: k3deploy's Jobs have a read-only root, explicit writable mounts, requests and a memory
    limit, a fixed UID/GID, and no ServiceAccount token (none of them calls the Kubernetes API)."""
    assert pod["automountServiceAccountToken"] is False, where
    assert _sc(pod)["runAsUser"] == _sc(pod)["runAsGroup"] != 0, where
    for c in _containers(pod):
        assert _sc(c)["readOnlyRootFilesystem"] is True, where
        assert "/tmp" in {m["mountPath"] for m in c.get("volumeMounts") or []}, where
        assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and "memory" in c["resources"]["limits"], where


# --- the rules themselves refuse what the documentation forbids ------------------------------------------------

@pytest.mark.parametrize(("rule", "pod"), [
    (host_namespaces, {"hostPID": True}),
    (privileged, {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}),
    (baseline_capabilities, {"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]}),
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
    (restricted_capabilities, {"containers": [{"name": "c", "securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}]}),
], ids=lambda v: getattr(v, "__name__", ""))
def test_each_rule_refuses_a_violation(rule: Rule, pod: Pod) -> None:
    assert rule(pod)


def test_prefetch_owns_the_cache_it_fills_without_walking_it_each_start() -> None:
    """Non-root, the prefetch writes the weight cache through its fsGroup; OnRootMismatch spares a recursive
    relabel of ~1.5 TB on every start."""
    pods = [pod for where, pod, _ in PODS if where.endswith("-prefetch")]
    assert pods
    for pod in pods:
        assert _sc(pod)["fsGroup"] == _sc(pod)["runAsGroup"]
        assert _sc(pod)["fsGroupChangePolicy"] == "OnRootMismatch"
