"""The set's Kubernetes API permissions, judged by the real RBAC authorizer: its in-cluster commands call nothing
but the smoke Job's gate (smoke.gate_traffic), which only reads, and the set grants its pods' identities nothing
but that gate's Role (tests/render/test_rbac.py GATE).

The set's ServiceAccount and RBAC objects are applied to a namespace of the real plane; each pod identity gets a
real token (TokenRequest). Every in-cluster command (read from the rendered Jobs: every container running the
k3deploy image) is run as its pod runs it (the profile from the ConfigMap as a file, the smoke against a scripted
vLLM-like server, the node preflight against a fake NVML) with that token and in-cluster API variables, through
the fault proxy in front of the real API server, which records every request: none may be made. The real
authorizer's rules review (SelfSubjectRulesReview, what `kubectl auth can-i --list` shows) of each identity equals
that of an account nothing is bound to. The recorder's judge: `status` with the same token is recorded, and the
real authorizer forbids it.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3deploy.profile import load_profile
from k3deploy.render.manifests import PROFILE_KEY, build
from tests.conftest import REPO_ROOT, run_cli_process
from tests.preflight.test_cli_node import fake_pynvml_dir
from tests.realk8s.client import Api, resource_path, wait_until
from tests.realk8s.fault_fixtures import ProxiedPlane
from tests.realk8s.plane import Plane
from tests.render.test_rbac import FAST, GATE, K3, RBAC_KINDS, granted, in_cluster_commands, pod_specs
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
#: Where each kind of the set that names an identity or grants rights lives.
API = {
    "ServiceAccount": "v1",
    **{kind: "rbac.authorization.k8s.io/v1" for kind in RBAC_KINDS},
}
NAMESPACED = {"ServiceAccount", "Role", "RoleBinding"}


def _plural(kind: str) -> str:
    return kind.lower() + "s"


def _apply_identities(realk8s: Plane, objects: list[dict[str, Any]], namespace: str) -> None:
    """Server-side apply the set's ServiceAccounts and RBAC objects, as `up` would."""
    for obj in objects:
        if obj["kind"] not in API:
            continue
        where = namespace if obj["kind"] in NAMESPACED else None
        path = resource_path(API[obj["kind"]], _plural(obj["kind"]), where, obj["metadata"]["name"])
        realk8s.api.apply(path, obj)


def _token(realk8s: Plane, namespace: str, account: str) -> str:
    """A real token of the ServiceAccount (TokenRequest, as the kubelet asks for a projected one)."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}"
    wait_until(f"ServiceAccount {account}", lambda: realk8s.api.find(path), 60)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    return str(realk8s.api.create(f"{path}/token", body)["status"]["token"])


def _kubeconfig(path: Path, server: str, ca_file: Path, token: str) -> Path:
    ca = base64.b64encode(ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "in-cluster", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "pod", "user": {"token": token}}],
        "contexts": [{"name": "pod", "context": {"cluster": "in-cluster", "user": "pod"}}],
        "current-context": "pod",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _rules(realk8s: Plane, token: str, namespace: str) -> tuple[list[Any], list[Any]]:
    """The real authorizer's rules for the token's identity in `namespace` (resource and non-resource rules)."""
    api = Api(realk8s.url, token, realk8s.ca_file)
    try:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": namespace},
        }
        status = api.create("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", body)["status"]
    finally:
        api.close()
    key = lambda rule: yaml.safe_dump(rule, sort_keys=True)  # noqa: E731 - an order-free comparison
    return sorted(status.get("resourceRules") or [], key=key), sorted(status.get("nonResourceRules") or [], key=key)


def _env(kubeconfig: Path, proxy: ProxiedPlane, tmp_path: Path) -> dict[str, str]:
    return {
        "KUBECONFIG": str(kubeconfig),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": proxy.url.rsplit(":", 1)[1],
        "PYTHONPATH": f"{fake_pynvml_dir(tmp_path, 'gb300_node()')}:{REPO_ROOT}",
        "HOME": str(tmp_path),
    }


def _accounts(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Job name -> the ServiceAccount its pods run as."""
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"].get("serviceAccountName", "default")
        for o in objects
        if o["kind"] == "Job"
    }


def test_in_cluster_commands_call_only_the_gates_reads_and_the_real_authorizer_grants_only_the_gate(
    realk8s: Plane, namespace: str, fault_proxy: ProxiedPlane, tmp_path: Path
) -> None:
    p = load_profile(K3, [*FAST, f"kubernetes.namespace={namespace}"])
    objects = [m.obj for m in build(p)]
    commands = in_cluster_commands(objects, p.kubernetes.smoke_image)
    assert set(commands) == {f"{K3}-smoke", f"{K3}-node-preflight"}
    _apply_identities(realk8s, objects, namespace)
    accounts = _accounts(objects)
    tokens = {a: _token(realk8s, namespace, a) for a in {accounts[job] for job in commands}}

    profile_yaml = next(o for o in objects if o["kind"] == "ConfigMap" and PROFILE_KEY in o.get("data", {}))
    calls: dict[str, list[str]] = {}
    with scripted_server(Script(models=[p.model.served_name])) as srv:
        for job, args in commands.items():
            work = tmp_path / job
            work.mkdir()
            profile_file = work / PROFILE_KEY
            profile_file.write_text(profile_yaml["data"][PROFILE_KEY])
            argv = [str(profile_file) if a.startswith("/etc/k3deploy/") else a for a in args]
            if "--endpoint" in argv:
                argv[argv.index("--endpoint") + 1] = srv.url
            kubeconfig = _kubeconfig(work / "kubeconfig", fault_proxy.url, realk8s.ca_file, tokens[accounts[job]])
            before = len(fault_proxy.faults.requests)
            done = run_cli_process(*argv, env=_env(kubeconfig, fault_proxy, work), timeout=300)
            assert "Traceback" not in done.stderr, done.stderr
            assert done.returncode in (0, 1), (argv, done.stderr)  # ran to its verdict
            calls[job] = fault_proxy.faults.requests[before:]
    assert calls[f"{K3}-node-preflight"] == []
    # The smoke Job's gate looks for the release's two LeaderWorkerSets by name (none here: no leader to gate, so it
    # labels nothing) and reads the API's discovery on the way; it writes nothing.
    lws = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace)
    gate = calls[f"{K3}-smoke"]
    assert {f"GET {lws}/{K3}", f"GET {lws}/{K3}-green"} <= set(gate), gate
    assert all(call.startswith("GET ") for call in gate), gate

    # What the real authorizer lets each identity do equals what it lets an account nothing is bound to do.
    realk8s.api.create(
        resource_path("v1", "serviceaccounts", namespace),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nothing-bound"}},
    )
    baseline = _rules(realk8s, _token(realk8s, namespace, "nothing-bound"), namespace)
    for account in {spec.get("serviceAccountName", "default") for spec in pod_specs(objects)} - {f"{K3}-smoke-gate"}:
        assert _rules(realk8s, tokens.get(account) or _token(realk8s, namespace, account), namespace) == baseline, (
            account
        )
    rules, _ = _rules(realk8s, tokens[f"{K3}-smoke-gate"], namespace)
    extra = [r for r in rules if r not in baseline[0]]
    assert {
        (v, g, r) for rule in extra for v in rule["verbs"] for g in rule["apiGroups"] for r in rule["resources"]
    } == (GATE)
    assert granted(objects, namespace) == GATE


def test_the_recorder_sees_a_command_that_calls_the_api_and_the_real_authorizer_forbids_it(
    realk8s: Plane, namespace: str, fault_proxy: ProxiedPlane, tmp_path: Path
) -> None:
    """The judge itself: `status` as the set's identity reads the cluster, so it is recorded, and real RBAC
    refuses it: an empty record above means no call, not calls the recorder missed."""
    p = load_profile(K3, [f"kubernetes.namespace={namespace}"])
    _apply_identities(realk8s, [m.obj for m in build(p)], namespace)
    kubeconfig = _kubeconfig(
        tmp_path / "kubeconfig", fault_proxy.url, realk8s.ca_file, _token(realk8s, namespace, "k3deploy")
    )
    before = len(fault_proxy.faults.requests)
    done = run_cli_process(
        "status", "-p", K3, "-n", namespace, env=_env(kubeconfig, fault_proxy, tmp_path), timeout=120
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert len(fault_proxy.faults.requests) > before
    assert done.returncode == 3, done.stderr
    assert f'User "system:serviceaccount:{namespace}:k3deploy" cannot get resource' in done.stderr, done.stderr

    # And the rules review tells a bound Role apart from nothing bound.
    token = _token(realk8s, namespace, "k3deploy")
    baseline = _rules(realk8s, token, namespace)
    rbac = "rbac.authorization.k8s.io/v1"
    role = {
        "apiVersion": rbac,
        "kind": "Role",
        "metadata": {"name": "reads-pods"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": rbac,
        "kind": "RoleBinding",
        "metadata": {"name": "reads-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reads-pods"},
        "subjects": [{"kind": "ServiceAccount", "name": "k3deploy", "namespace": namespace}],
    }
    _apply_identities(realk8s, [role, binding], namespace)
    wait_until("the Role to count", lambda: _rules(realk8s, token, namespace) != baseline, 30)
