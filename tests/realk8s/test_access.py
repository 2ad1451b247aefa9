"""Preflight's access review asks for every verb the rollout's wait and proof need, answered by real RBAC: a deployer
whose Role grants everything `up` uses but `list` on ControllerRevisions fails k8s.rbac naming that verb (the LWS
status of a controller before v0.9 could not be proven without it), and passes once it is granted; `up --strategy
blue-green` asks for the `list` on EndpointSlices its Service switch waits on, which a rolling `up` never needs."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.rollout.access import command_access
from k3deploy.rollout.plan import UP_STRATEGY, Strategy
from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.test_preflight import RBAC, READ, _binding, _rbac_check

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
USER = "realk8s-deployer"
SETS = ("kubernetes.compute_domain=false", "kubernetes.hf_token_secret=null")


def _role_rules(without: tuple[str, str, str] | None, strategy: Strategy = UP_STRATEGY) -> list[dict]:
    profile = load_profile("kimi-k3-gb300-tp16", list(SETS))
    rules = []
    # No --endpoint: up smokes through a forward.
    for access in command_access(rendered_objects(profile), strategy, port_forward=True):
        if access.resource == "namespaces" or (access.verb, access.resource, access.group) == without:
            continue
        resource = f"{access.resource}/{access.subresource}" if access.subresource else access.resource
        rules.append({"apiGroups": [access.group], "resources": [resource], "verbs": [access.verb]})
    return rules


@contextlib.contextmanager
def _deployer(realk8s: Plane, namespace: str, tmp_path: Path, rules: list[dict]) -> Iterator[Path]:
    """A deployer with cluster-wide reads for preflight and, in `namespace`, Role `deployer` of `rules`."""
    name = f"realk8s-reader-{uuid.uuid4().hex[:6]}"
    core, grouped = READ
    reads = [{"apiGroups": [""], "resources": core, "verbs": ["get", "list", "watch"]}]
    reads += [{"apiGroups": [g], "resources": [r], "verbs": ["get", "list", "watch"]} for g, r in grouped]
    api = realk8s.api
    api.create(
        resource_path(RBAC, "clusterroles"),
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": reads},
    )
    api.create(resource_path(RBAC, "clusterrolebindings"), _binding("ClusterRoleBinding", name, "ClusterRole", name))
    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "deployer", "namespace": namespace},
        "rules": rules,
    }
    api.create(resource_path(RBAC, "roles", namespace), role)
    api.create(
        resource_path(RBAC, "rolebindings", namespace),
        _binding("RoleBinding", "deployer", "Role", "deployer", namespace),
    )
    as_deployer = realk8s.client(USER)
    try:
        wait_until(
            "the deployer's bindings", lambda: as_deployer.request("GET", "/api/v1/nodes").status_code == 200, 30
        )
    finally:
        as_deployer.close()
    try:
        yield realk8s.kubeconfig(tmp_path / "deployer.kubeconfig", USER)
    finally:
        api.delete(resource_path(RBAC, "clusterrolebindings", name=name))
        api.delete(resource_path(RBAC, "clusterroles", name=name))


@pytest.fixture
def exact_deployer(realk8s: Plane, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """A deployer with exactly the verbs `up` needs but `list controllerrevisions.apps` (Role `deployer`, replaced by
    the test to grant it)."""
    with _deployer(realk8s, namespace, tmp_path, _role_rules(("list", "controllerrevisions", "apps"))) as config:
        yield config


def test_the_access_review_asks_for_the_verbs_the_readiness_proof_needs(
    realk8s: Plane, namespace: str, exact_deployer: Path
) -> None:
    denied = _rbac_check(exact_deployer, namespace)
    assert denied["status"] == "fail", denied
    assert f"denied in {namespace}: list controllerrevisions.apps" in denied["detail"], denied

    revisions = resource_path("apps/v1", "controllerrevisions", namespace)
    realk8s.api.apply(
        resource_path(RBAC, "roles", namespace, "deployer"),
        {
            "apiVersion": RBAC,
            "kind": "Role",
            "metadata": {"name": "deployer", "namespace": namespace},
            "rules": _role_rules(None),
        },
    )
    as_deployer = realk8s.client(USER)
    try:
        wait_until("the granted list", lambda: as_deployer.request("GET", revisions).status_code == 200, 30)
    finally:
        as_deployer.close()
    granted = _rbac_check(exact_deployer, namespace)
    assert granted["status"] == "pass", granted


ENDPOINT_SLICES = ("list", "endpointslices", "discovery.k8s.io")


def test_blue_green_asks_for_the_endpoint_slices_its_switch_lists(
    realk8s: Plane, namespace: str, tmp_path: Path
) -> None:
    """The deployer may do all a blue-green `up` does but list EndpointSlices: preflight stops it before anything
    is applied, naming that verb (without it the switch would wait on a 403 with the new group live beside the old)."""
    rules = _role_rules(ENDPOINT_SLICES, Strategy("blue-green", group_smoke=True))
    rolling = _role_rules(None)  # what a rolling up needs: no EndpointSlices
    assert sorted(map(json.dumps, rules)) == sorted(map(json.dumps, rolling))
    with _deployer(realk8s, namespace, tmp_path, rules) as config:
        sets = [a for s in SETS for a in ("--set", s)]
        done = run_cli(
            "up", "-p", "kimi-k3-gb300-tp16", "--kubeconfig", str(config), "-n", namespace, *sets,
            "--strategy", "blue-green", "--yes", "-o", "json", timeout=180,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    stages = json.loads(done.stdout)["stages"]
    assert (stages[0]["name"], stages[0]["status"]) == ("preflight", "fail"), stages
    rbac = next(line for line in done.stderr.splitlines() if "k8s.rbac" in line)
    assert rbac.split()[0] == "fail", rbac
    assert f"denied in {namespace}: list endpointslices.discovery.k8s.io" in rbac, rbac
    applied = realk8s.api.request("GET", resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace))
    assert applied.json()["items"] == []
