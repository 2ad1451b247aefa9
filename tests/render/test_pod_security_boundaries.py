"""The Pod Security Standards' rules pinned at their boundaries (survivors of tests/mutation/run on
render/pod_security.py): each rule refuses exactly what the standard forbids and admits what it allows, on the pod
and on every kind of container (containers, initContainers, ephemeralContainers); a level enforces exactly its
rules; only a Job's and a LeaderWorkerSet's templates are pods."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.render import pod_security as ps
from k3deploy.render.pod_security import Pod


def one(sc: dict[str, Any] | None = None, key: str = "containers", **fields: Any) -> Pod:
    """A pod spec with one container `c` (in `key`) whose securityContext is `sc`."""
    container: dict[str, Any] = {"name": "c", **fields}
    if sc is not None:
        container["securityContext"] = sc
    return {key: [container]}


@pytest.mark.parametrize("key", ["initContainers", "containers", "ephemeralContainers"])
def test_every_kind_of_container_is_judged_because_the_standard_counts_all_three(key: str) -> None:
    pod = {key: [{"name": "c", "securityContext": {"privileged": True}}], "other": None}
    assert [c["name"] for c in ps.all_containers(pod)] == ["c"]
    assert ps.privileged(pod) == ["c: privileged"]
    assert ps.all_containers({"containers": None, "initContainers": []}) == []


def test_host_process_is_refused_on_the_pod_and_on_a_container_and_false_is_allowed() -> None:
    on = {"windowsOptions": {"hostProcess": True}}
    off = {"windowsOptions": {"hostProcess": False}}
    assert ps.host_process({"securityContext": on}) == ["pod: hostProcess"]
    assert ps.host_process(one(on)) == ["c: hostProcess"]
    assert ps.host_process({"securityContext": off, **one(off)}) == []
    assert ps.host_process(one({"windowsOptions": None})) == []


@pytest.mark.parametrize("key", ["hostNetwork", "hostPID", "hostIPC"])
def test_each_host_namespace_is_refused_and_false_is_allowed(key: str) -> None:
    assert ps.host_namespaces({key: True}) == [key]
    assert ps.host_namespaces({key: False}) == []


def test_privileged_true_is_refused_and_false_is_allowed() -> None:
    assert ps.privileged(one({"privileged": True})) == ["c: privileged"]
    assert ps.privileged(one({"privileged": False})) == []
    assert ps.privileged(one()) == []


def test_baseline_capabilities_allow_the_listed_set_only() -> None:
    assert ps.baseline_capabilities(one({"capabilities": {"add": ["CHOWN", "SYS_CHROOT", "NET_BIND_SERVICE"]}})) == []
    assert ps.baseline_capabilities(one({"capabilities": {"add": ["CHOWN", "SYS_ADMIN"]}})) == ["c: adds SYS_ADMIN"]
    assert ps.baseline_capabilities(one({"capabilities": None})) == []
    assert ps.baseline_capabilities(one({"capabilities": {"add": None}})) == []


def test_a_host_path_volume_is_refused_and_others_are_not() -> None:
    pod = {"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}}]}
    assert ps.host_path_volumes(pod) == ["volume a: hostPath"]
    assert ps.host_path_volumes({"volumes": None}) == []


def test_a_host_port_is_refused_and_zero_or_none_is_allowed() -> None:
    assert ps.host_ports(one(ports=[{"containerPort": 80, "hostPort": 8080}])) == ["c: hostPort 8080"]
    assert ps.host_ports(one(ports=[{"containerPort": 80, "hostPort": 0}, {"containerPort": 81}])) == []
    assert ps.host_ports(one(ports=None)) == []


@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe", "startupProbe"])
@pytest.mark.parametrize("kind", ["httpGet", "tcpSocket"])
def test_a_probe_naming_a_host_is_refused_and_an_empty_host_is_allowed(probe: str, kind: str) -> None:
    assert ps.host_probes(one(**{probe: {kind: {"host": "10.0.0.1", "port": 1}}})) == [f"c: {kind}.host"]
    assert ps.host_probes(one(**{probe: {kind: {"host": "", "port": 1}}})) == []
    assert ps.host_probes(one(**{probe: {kind: {"port": 1}}})) == []


def test_a_lifecycle_hook_naming_a_host_is_refused() -> None:
    hooks = {"postStart": {"httpGet": {"host": "h", "port": 1}}, "preStop": {"tcpSocket": {"port": 1}}}
    assert ps.host_probes(one(lifecycle=hooks)) == ["c: httpGet.host"]
    assert ps.host_probes(one(lifecycle={"preStop": {"tcpSocket": {"host": "h", "port": 1}}})) == ["c: tcpSocket.host"]
    assert ps.host_probes(one(lifecycle=None)) == []


def test_app_armor_allows_runtime_default_and_localhost_only() -> None:
    for allowed in ("RuntimeDefault", "Localhost"):
        sc = {"appArmorProfile": {"type": allowed}}
        assert ps.app_armor({"securityContext": sc, **one(sc)}) == []
    bad = {"appArmorProfile": {"type": "Unconfined"}}
    assert ps.app_armor({"securityContext": bad}) == ["pod: appArmor Unconfined"]
    assert ps.app_armor(one(bad)) == ["c: appArmor Unconfined"]
    assert ps.app_armor({}) == []


def test_app_armor_annotations_allow_runtime_default_and_localhost_profiles_only() -> None:
    key = "container.apparmor.security.beta.kubernetes.io/c"
    assert ps.app_armor({}, {key: "runtime/default"}) == []
    assert ps.app_armor({}, {key: "localhost/my-profile"}) == []
    assert ps.app_armor({}, {key: "unconfined"}) == [key]
    assert ps.app_armor({}, {"other.example/c": "unconfined"}) == []
    # check() hands the AppArmor rule the annotations, and no other rule
    assert ps.check(ps.app_armor, {}, {key: "unconfined"}) == [key]
    assert ps.violations("baseline", {}, {key: "unconfined"}) == {"app-armor": [key]}


def test_selinux_allows_the_container_types_and_refuses_another_type_a_user_or_a_role() -> None:
    for allowed in ("container_t", "container_init_t", "container_kvm_t", "container_engine_t", ""):
        assert ps.selinux(one({"seLinuxOptions": {"type": allowed}})) == []
    assert ps.selinux(one({"seLinuxOptions": {"level": "s0:c1"}})) == []
    assert ps.selinux(one({"seLinuxOptions": {"type": "spc_t"}})) == ["c: seLinuxOptions {'type': 'spc_t'}"]
    assert ps.selinux({"securityContext": {"seLinuxOptions": {"user": "root"}}}) == [
        "pod: seLinuxOptions {'user': 'root'}"
    ]
    assert ps.selinux(one({"seLinuxOptions": {"type": "container_t", "role": "r"}})) != []


def test_proc_mount_allows_default_only() -> None:
    assert ps.proc_mount(one({"procMount": "Unmasked"})) == ["c: procMount"]
    assert ps.proc_mount(one({"procMount": "Default"})) == []
    assert ps.proc_mount(one({})) == []


def test_baseline_seccomp_allows_runtime_default_localhost_or_nothing() -> None:
    for allowed in ("RuntimeDefault", "Localhost"):
        assert ps.baseline_seccomp(one({"seccompProfile": {"type": allowed}})) == []
    assert ps.baseline_seccomp(one({})) == []
    assert ps.baseline_seccomp(one({"seccompProfile": {"type": "Unconfined"}})) == ["c: seccomp Unconfined"]
    assert ps.baseline_seccomp({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}) == [
        "pod: seccomp Unconfined"
    ]


def test_sysctls_allow_the_safe_set_only() -> None:
    sc = {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}, {"name": "kernel.msgmax"}]}
    assert ps.sysctls({"securityContext": sc}) == ["kernel.msgmax"]
    assert ps.sysctls({"securityContext": {"sysctls": None}}) == []


def test_volume_types_allow_the_restricted_set_and_ignore_the_name() -> None:
    ok = [{"name": n, n: {}} for n in ("configMap", "emptyDir", "projected", "persistentVolumeClaim")]
    assert ps.volume_types({"volumes": ok}) == []
    assert ps.volume_types({"volumes": [{"name": "v", "hostPath": {}}]}) == ["volume v: {'hostPath'}"]
    assert ps.volume_types({"volumes": None}) == []


def test_privilege_escalation_must_be_false_not_merely_unset() -> None:
    assert ps.privilege_escalation(one({"allowPrivilegeEscalation": False})) == []
    assert ps.privilege_escalation(one({"allowPrivilegeEscalation": True})) == ["c"]
    assert ps.privilege_escalation(one({})) == ["c"]


@pytest.mark.parametrize(
    ("pod_level", "container_level", "bad"),
    [
        (True, None, []),  # the pod says non-root: every container inherits it
        (None, True, []),  # each container says it
        (True, True, []),
        (None, None, ["c: runAsNonRoot not true"]),  # nobody says it
        (True, False, ["c: runAsNonRoot not true"]),  # a container overrides the pod
        (False, True, ["pod: runAsNonRoot false"]),  # the pod may not say false, even when the container says true
        (False, None, ["pod: runAsNonRoot false", "c: runAsNonRoot not true"]),
    ],
)
def test_run_as_non_root_must_be_true_on_the_pod_or_every_container_and_false_nowhere(
    pod_level: bool | None, container_level: bool | None, bad: list[str]
) -> None:
    pod_sc = {} if pod_level is None else {"runAsNonRoot": pod_level}
    c_sc = {} if container_level is None else {"runAsNonRoot": container_level}
    assert ps.run_as_non_root({"securityContext": pod_sc, **one(c_sc)}) == bad


def test_run_as_user_refuses_zero_only() -> None:
    assert ps.run_as_user({"securityContext": {"runAsUser": 0}}) == ["pod: runAsUser 0"]
    assert ps.run_as_user(one({"runAsUser": 0})) == ["c: runAsUser 0"]
    assert ps.run_as_user({"securityContext": {"runAsUser": 1000}, **one({"runAsUser": 1})}) == []
    assert ps.run_as_user(one({})) == []


def test_restricted_seccomp_takes_the_pods_profile_or_each_containers() -> None:
    for allowed in ("RuntimeDefault", "Localhost"):
        assert ps.restricted_seccomp({"securityContext": {"seccompProfile": {"type": allowed}}, **one({})}) == []
        assert ps.restricted_seccomp(one({"seccompProfile": {"type": allowed}})) == []
    assert ps.restricted_seccomp(one({})) == ["c: no seccomp profile"]
    # a container's Unconfined is refused even when the pod sets RuntimeDefault (the baseline rule)
    pod = {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        **one({"seccompProfile": {"type": "Unconfined"}}),
    }
    assert ps.restricted_seccomp(pod) == ["c: seccomp Unconfined"]


def test_restricted_capabilities_drop_all_and_add_net_bind_service_at_most() -> None:
    ok = {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}
    assert ps.restricted_capabilities(one(ok)) == []
    assert ps.restricted_capabilities(one({"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}})) == ["c: adds CHOWN"]
    assert ps.restricted_capabilities(one({"capabilities": {"drop": ["NET_RAW"]}})) == ["c: does not drop ALL"]
    assert ps.restricted_capabilities(one({})) == ["c: does not drop ALL"]


def test_each_level_enforces_exactly_its_rules() -> None:
    assert ps.rules_of("privileged") == {}
    assert ps.rules_of("baseline") == ps.BASELINE
    assert ps.rules_of("restricted") == {**ps.BASELINE, **ps.RESTRICTED}
    with pytest.raises(ValueError, match="unknown Pod Security level 'open'"):
        ps.rules_of("open")


def test_violations_name_only_the_broken_rules_of_the_level() -> None:
    pod = {"hostPID": True, **one({"allowPrivilegeEscalation": False})}
    assert ps.violations("privileged", pod) == {}
    assert ps.violations("baseline", pod) == {"host-namespaces": ["hostPID"]}
    restricted = ps.violations("restricted", pod)
    assert restricted["host-namespaces"] == ["hostPID"] and "privilege-escalation" not in restricted
    assert set(restricted) == {"host-namespaces", "run-as-non-root", "seccomp-restricted", "capabilities-restricted"}


def test_pod_templates_are_a_jobs_and_a_daemonsets_template_and_both_lws_templates_only() -> None:
    job = {
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"metadata": {"annotations": {"a": "1"}}, "spec": {"containers": []}}},
    }
    lws = {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "s"},
        "spec": {
            "leaderWorkerTemplate": {
                "leaderTemplate": {"metadata": {"annotations": {"l": "1"}}, "spec": {"x": 1}},
                "workerTemplate": {"spec": {"x": 2}},
            }
        },
    }
    other = {"kind": "Service", "metadata": {"name": "svc"}, "spec": {}}
    bare_job = {"kind": "Job", "metadata": {"name": "b"}, "spec": {"template": {"spec": {}}}}
    daemon = {"kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"y": 1}}}}
    assert ps.pod_templates([job, other, lws, bare_job, daemon]) == [
        ("Job/j", {"containers": []}, {"a": "1"}),
        ("LeaderWorkerSet/s/leaderTemplate", {"x": 1}, {"l": "1"}),
        ("LeaderWorkerSet/s/workerTemplate", {"x": 2}, {}),
        ("Job/b", {}, {}),
        ("DaemonSet/d", {"y": 1}, {}),
    ]
