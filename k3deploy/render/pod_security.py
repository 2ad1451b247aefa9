"""The Pod Security Standards' baseline and restricted rules, one function per rule, and a pod's level. Pure.

The rules are those of https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the "Baseline" and
"Restricted" tables, as enforced by Pod Security Admission, kubernetes/pod-security-admission policy/check_*.go,
at version "latest"): each returns what it finds wrong with a pod spec. "Containers" there means containers,
initContainers and ephemeralContainers. Used by `preflight --cluster` (would the namespace's Pod Security
Admission level admit the set?) and by the tests that hold the set to its levels.
"""

from __future__ import annotations

from collections.abc import Callable

from k3deploy.kobject import KubeObject
from k3deploy.profile.model import Profile

Pod = KubeObject
Rule = Callable[..., list[str]]


def all_containers(pod: Pod) -> list[KubeObject]:
    """Containers, initContainers and ephemeralContainers of a pod spec."""
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in pod.get(key) or []]


def security_context(node: KubeObject) -> KubeObject:
    """The securityContext of a pod spec or container ({} when unset)."""
    return node.get("securityContext") or {}


def _both(pod: Pod) -> list[tuple[str, KubeObject]]:
    """The pod's securityContext and each container's, with a name for the message."""
    return [("pod", security_context(pod))] + [(c["name"], security_context(c)) for c in all_containers(pod)]


# --- Baseline -------------------------------------------------------------------------------------------------


def host_process(pod: Pod) -> list[str]:
    """HostProcess: securityContext.windowsOptions.hostProcess undefined or false."""
    return [f"{who}: hostProcess" for who, sc in _both(pod) if (sc.get("windowsOptions") or {}).get("hostProcess")]


def host_namespaces(pod: Pod) -> list[str]:
    """Host Namespaces: spec.hostNetwork, hostPID, hostIPC undefined or false."""
    return [key for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]


def privileged(pod: Pod) -> list[str]:
    """Privileged Containers: securityContext.privileged undefined or false."""
    return [f"{c['name']}: privileged" for c in all_containers(pod) if security_context(c).get("privileged")]


BASELINE_CAPABILITIES = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}


def baseline_capabilities(pod: Pod) -> list[str]:
    """Capabilities: capabilities.add undefined or within the baseline set."""
    return [
        f"{c['name']}: adds {cap}"
        for c in all_containers(pod)
        for cap in (security_context(c).get("capabilities") or {}).get("add") or []
        if cap not in BASELINE_CAPABILITIES
    ]


def host_path_volumes(pod: Pod) -> list[str]:
    """HostPath Volumes: no hostPath volume."""
    return [f"volume {v['name']}: hostPath" for v in pod.get("volumes") or [] if "hostPath" in v]


def host_ports(pod: Pod) -> list[str]:
    """Host Ports: ports[*].hostPort undefined or 0."""
    return [
        f"{c['name']}: hostPort {p['hostPort']}"
        for c in all_containers(pod)
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]


def host_probes(pod: Pod) -> list[str]:
    """Host Probes / Lifecycle Hooks: probes' and lifecycle handlers' httpGet.host / tcpSocket.host unset or ""."""
    handlers = [
        (c["name"], c.get(key))
        for c in all_containers(pod)
        for key in ("livenessProbe", "readinessProbe", "startupProbe")
    ]
    handlers += [(c["name"], hook) for c in all_containers(pod) for hook in (c.get("lifecycle") or {}).values()]
    return [
        f"{name}: {kind}.host"
        for name, handler in handlers
        if handler
        for kind in ("httpGet", "tcpSocket")
        if (handler.get(kind) or {}).get("host")
    ]


def app_armor(pod: Pod, annotations: dict[str, str] | None = None) -> list[str]:
    """AppArmor: appArmorProfile.type undefined, RuntimeDefault or Localhost (and the beta annotation likewise)."""
    bad = [
        f"{who}: appArmor {sc['appArmorProfile']['type']}"
        for who, sc in _both(pod)
        if "appArmorProfile" in sc and sc["appArmorProfile"].get("type") not in ("RuntimeDefault", "Localhost")
    ]
    return bad + [
        key
        for key, value in (annotations or {}).items()
        if key.startswith("container.apparmor.security.beta.kubernetes.io/")
        and value != "runtime/default"
        and not value.startswith("localhost/")
    ]


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
    return [
        f"{c['name']}: procMount"
        for c in all_containers(pod)
        if security_context(c).get("procMount", "Default") != "Default"
    ]


def baseline_seccomp(pod: Pod) -> list[str]:
    """Seccomp (baseline): seccompProfile.type undefined, RuntimeDefault or Localhost (never Unconfined)."""
    return [
        f"{who}: seccomp {sc['seccompProfile'].get('type')}"
        for who, sc in _both(pod)
        if "seccompProfile" in sc and sc["seccompProfile"].get("type") not in ("RuntimeDefault", "Localhost")
    ]


SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}


def sysctls(pod: Pod) -> list[str]:
    """Sysctls: only the safe set."""
    return [s["name"] for s in security_context(pod).get("sysctls") or [] if s["name"] not in SAFE_SYSCTLS]


BASELINE: dict[str, Rule] = {
    "host-process": host_process,
    "host-namespaces": host_namespaces,
    "privileged": privileged,
    "capabilities": baseline_capabilities,
    "host-path-volumes": host_path_volumes,
    "host-ports": host_ports,
    "host-probes": host_probes,
    "app-armor": app_armor,
    "selinux": selinux,
    "proc-mount": proc_mount,
    "seccomp": baseline_seccomp,
    "sysctls": sysctls,
}


# --- Restricted (on top of baseline) --------------------------------------------------------------------------

RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def volume_types(pod: Pod) -> list[str]:
    """Volume Types: only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret."""
    return [
        f"volume {v['name']}: {kinds}"
        for v in pod.get("volumes") or []
        if (kinds := set(v) - {"name"}) - RESTRICTED_VOLUMES
    ]


def privilege_escalation(pod: Pod) -> list[str]:
    """Privilege Escalation: allowPrivilegeEscalation must be false on every container."""
    return [c["name"] for c in all_containers(pod) if security_context(c).get("allowPrivilegeEscalation") is not False]


def run_as_non_root(pod: Pod) -> list[str]:
    """Running as Non-root: runAsNonRoot true on the pod, or on every container (none may set it false)."""
    pod_level = security_context(pod).get("runAsNonRoot")
    bad = ["pod: runAsNonRoot false"] if pod_level is False else []
    for c in all_containers(pod):
        level = security_context(c).get("runAsNonRoot")
        if level is False or (level is None and pod_level is not True):
            bad.append(f"{c['name']}: runAsNonRoot not true")
    return bad


def run_as_user(pod: Pod) -> list[str]:
    """Running as Non-root user: runAsUser undefined or non-zero."""
    return [f"{who}: runAsUser 0" for who, sc in _both(pod) if sc.get("runAsUser") == 0]


def restricted_seccomp(pod: Pod) -> list[str]:
    """Seccomp (restricted): RuntimeDefault or Localhost on the pod, or on every container."""
    allowed = ("RuntimeDefault", "Localhost")
    pod_set = (security_context(pod).get("seccompProfile") or {}).get("type") in allowed
    bad = baseline_seccomp(pod)
    return bad + [
        f"{c['name']}: no seccomp profile"
        for c in all_containers(pod)
        if not pod_set and (security_context(c).get("seccompProfile") or {}).get("type") not in allowed
    ]


def restricted_capabilities(pod: Pod) -> list[str]:
    """Capabilities (restricted): drop ALL; add only NET_BIND_SERVICE."""
    bad = []
    for c in all_containers(pod):
        caps = security_context(c).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            bad.append(f"{c['name']}: does not drop ALL")
        bad += [f"{c['name']}: adds {cap}" for cap in caps.get("add") or [] if cap != "NET_BIND_SERVICE"]
    return bad


RESTRICTED: dict[str, Rule] = {
    "volume-types": volume_types,
    "privilege-escalation": privilege_escalation,
    "run-as-non-root": run_as_non_root,
    "run-as-user": run_as_user,
    "seccomp-restricted": restricted_seccomp,
    "capabilities-restricted": restricted_capabilities,
}

#: Pod Security Admission levels, most permissive first.
LEVELS = ("privileged", "baseline", "restricted")


def check(rule: Rule, pod: Pod, annotations: dict[str, str] | None = None) -> list[str]:
    """What one rule finds wrong with a pod spec (the AppArmor rule also reads the pod's annotations)."""
    return rule(pod, annotations) if rule is app_armor else rule(pod)


def rules_of(level: str) -> dict[str, Rule]:
    """The rules a level enforces: none for privileged, baseline's, or baseline's and restricted's."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    return {} if level == "privileged" else {**BASELINE, **(RESTRICTED if level == "restricted" else {})}


def violations(level: str, pod: Pod, annotations: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Rule name -> what it finds wrong, for every rule of `level` the pod breaks (empty: the level admits it)."""
    found = {name: check(rule, pod, annotations) for name, rule in rules_of(level).items()}
    return {name: problems for name, problems in found.items() if problems}


def pod_templates(objects: list[KubeObject]) -> list[tuple[str, Pod, dict[str, str]]]:
    """(kind/name[/role], pod spec, pod annotations) of every pod a rendered set creates: its Jobs' (a CronJob's
    job template's too) and DaemonSets' templates and its LeaderWorkerSets' leader and worker templates."""
    pods = []
    for obj in objects:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] in ("Job", "CronJob", "DaemonSet"):
            job = obj["spec"]["jobTemplate"] if obj["kind"] == "CronJob" else obj
            template = job["spec"]["template"]
            pods.append((where, template["spec"], (template.get("metadata") or {}).get("annotations") or {}))
        elif obj["kind"] == "LeaderWorkerSet":
            lws = obj["spec"]["leaderWorkerTemplate"]
            for role in ("leaderTemplate", "workerTemplate"):
                pods.append(
                    (f"{where}/{role}", lws[role]["spec"], (lws[role].get("metadata") or {}).get("annotations") or {})
                )
    return pods


def pod_security_labels(profile: Profile) -> dict[str, str]:
    """Pod Security Admission labels of the Namespace k3deploy creates (kubernetes/pod-security-admission
    api/constants.go): kubernetes.pod_security_level for enforce, warn and audit. Baseline by default, the level the
    serving pods meet (vllm/vllm-openai runs as root), so a cluster whose default is restricted still admits them."""
    level = profile.kubernetes.pod_security_level
    return {f"pod-security.kubernetes.io/{mode}": level for mode in ("enforce", "warn", "audit")}
