"""The set's Kubernetes API permissions equal what its in-cluster commands call: nothing.

The in-cluster commands are read from the rendered Jobs themselves (every container running the k3deploy image),
so a new Job or a changed command is covered without editing this test. Each is run as its pod runs it (the
effective profile from the profile ConfigMap as a file, the smoke against a scripted vLLM-like server, the node
preflight against a fake NVML) with in-cluster API variables and a kubeconfig pointing at the test API server,
which records every request. The recorded calls must equal what the Roles bound to the set's identities grant;
with no calls, no Role exists and no pod mounts a service-account token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import PROFILE_KEY, build
from tests.conftest import REPO_ROOT, run_cli, run_cli_process
from tests.kubeapi.server import KubeApiServer
from tests.preflight.test_cli_node import fake_pynvml_dir
from tests.smoke.scripted_server import Script, scripted_server

K3 = "kimi-k3-gb300-tp16"
#: A short smoke (the in-cluster profile with a few requests), so the run exercises every phase quickly.
FAST = ["smoke.requests=2", "smoke.output_tokens=8", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]
RBAC_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}


def in_cluster_commands(objects: list[dict[str, Any]], image: str) -> dict[str, list[str]]:
    """Args of every container of the set that runs the k3deploy image, by Job name."""
    out = {}
    for obj in objects:
        if obj["kind"] != "Job":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            if container["image"] == image:
                out[obj["metadata"]["name"]] = list(container["args"])
    return out


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pod spec of the set: Jobs' templates and the LeaderWorkerSet's leader and worker templates."""
    specs = [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "Job"]
    for o in objects:
        if o["kind"] == "LeaderWorkerSet":
            lwt = o["spec"]["leaderWorkerTemplate"]
            specs += [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    return specs


def granted(objects: list[dict[str, Any]], namespace: str) -> set[tuple[str, str, str]]:
    """(verb, apiGroup, resource) the set's Roles and ClusterRoles grant, through its bindings, to its pods' identities."""
    accounts = {spec.get("serviceAccountName", "default") for spec in pod_specs(objects)}
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in {"Role", "ClusterRole"}}
    out = set()
    for binding in (o for o in objects if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}):
        subjects = {
            (s.get("namespace", namespace), s["name"])
            for s in binding.get("subjects") or []
            if s["kind"] == "ServiceAccount"
        }
        if not subjects & {(namespace, a) for a in accounts}:
            continue
        role = roles.get((binding["roleRef"]["kind"], binding["roleRef"]["name"]), {})
        for rule in role.get("rules") or []:
            out |= {
                (v, g, r) for v in rule["verbs"] for g in rule.get("apiGroups", [""]) for r in rule.get("resources", [])
            }
    return out


def run_as_in_the_pod(args: list[str], kube: KubeApiServer, tmp_path: Path, profile_yaml: str) -> list[str]:
    """Run one in-cluster command the way its pod does; the API requests it made."""
    profile_file = tmp_path / PROFILE_KEY
    profile_file.write_text(profile_yaml)
    env = {
        "KUBECONFIG": str(kube.kubeconfig),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(kube.port),
        "PYTHONPATH": f"{fake_pynvml_dir(tmp_path, 'gb300_node()')}:{REPO_ROOT}",
        "HOME": str(tmp_path),
    }
    served = load_profile(K3).model.served_name
    with scripted_server(Script(models=[served])) as srv:
        argv = [str(profile_file) if a.startswith("/etc/k3deploy/") else a for a in args]
        if "--endpoint" in argv:
            argv[argv.index("--endpoint") + 1] = srv.url
        before = len(kube.faults.requests)
        # A process of its own: the fake NVML is found through PYTHONPATH, as in the node-preflight pod.
        done = run_cli_process(*argv, env=env, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), (argv, done.stderr)  # ran to its verdict (1: a check failed on this machine)
    return kube.faults.requests[before:]


def test_in_cluster_commands_call_exactly_what_the_set_grants(kube: KubeApiServer, tmp_path: Path) -> None:
    p = load_profile(K3, FAST)
    objects = [m.obj for m in build(p)]
    commands = in_cluster_commands(objects, p.kubernetes.smoke_image)
    assert set(commands) == {f"{K3}-smoke", f"{K3}-node-preflight"}
    profile_yaml = next(o for o in objects if o["kind"] == "ConfigMap")["data"][PROFILE_KEY]
    calls: dict[str, list[str]] = {}
    for job, args in commands.items():
        work = tmp_path / job
        work.mkdir()
        calls[job] = run_as_in_the_pod(args, kube, work, profile_yaml)
    assert calls == {job: [] for job in commands}
    assert granted(objects, p.kubernetes.namespace) == set()
    assert not [o for o in objects if o["kind"] in RBAC_KINDS]


def test_no_pod_of_the_set_mounts_a_service_account_token() -> None:
    """Nothing calls the API, so no token: the pods opt out, and so does the set's ServiceAccount."""
    objects = [m.obj for m in build(load_profile(K3))]
    assert all(spec.get("automountServiceAccountToken") is False for spec in pod_specs(objects))
    account = next(o for o in objects if o["kind"] == "ServiceAccount")
    assert account["automountServiceAccountToken"] is False


def test_the_recorder_sees_a_command_that_calls_the_api(kube: KubeApiServer, tmp_path: Path) -> None:
    """The judge itself: a command that does read the cluster (`status`) is recorded, so an empty list means none."""
    kube.add_crds()
    env = {"KUBECONFIG": str(kube.kubeconfig), "HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    before = len(kube.faults.requests)
    done = run_cli("status", "-p", K3, env=env, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert len(kube.faults.requests) > before


def test_granted_reads_rules_through_bindings_to_the_sets_accounts() -> None:
    """The judge itself: a Role bound to the pods' account counts, one bound to another account does not."""
    objects = [m.obj for m in build(load_profile(K3))]
    role = {
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }

    def binding(account: str) -> dict[str, Any]:
        return {
            "kind": "RoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": account}],
        }

    assert granted([*objects, role, binding("k3deploy")], "kimi-k3") == {("get", "", "pods")}
    assert granted([*objects, role, binding("someone-else")], "kimi-k3") == set()
