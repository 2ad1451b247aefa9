"""`k3deploy status` shows per group the ComputeDomain state and each tray's health (fault_guard/health.py), from the
objects the API server holds (recorded here: RecordedApi of test_status.py): a tray NVSentinel marked sick and guard
cordoned, one the ComputeDomain reports NotReady, healthy ones; a Node the user may not read is `unknown`; the
table says it in a line per tray."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from k3deploy.errors import K3DeployError
from k3deploy.profile import load_profile
from k3deploy.targets.kubernetes.status import describe
from k3deploy.targets.kubernetes.view import kubernetes_status_view
from tests.support.lws_revision import REVISION_KEY, new_revision
from tests.targets.kubernetes.test_status import PROFILE, RecordedApi, _lws_v08, _pods

CD_NAME = f"{PROFILE}-compute-domain"


def _node(name: str, *, fault: bool = False, guard_cordoned: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True"}]
    if fault:
        conditions.append(
            {"type": "GpuNvlinkWatch", "status": "True", "reason": "GpuNvlinkWatchIsNotHealthy", "message": "link 7"}
        )
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.clique": "c1"}},
        "spec": {},
        "status": {"conditions": conditions},
    }
    if guard_cordoned:
        node["spec"]["unschedulable"] = True
        node["metadata"]["annotations"] = {"k3deploy/guard-cordoned-at": "2026-12-05T11:00:00Z"}
    return node


def _domain(status: str, nodes: dict[str, str]) -> dict[str, Any]:
    """The ComputeDomain as the DRA driver's controller writes its status (computedomain.go ComputeDomainStatus)."""
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": CD_NAME, "namespace": "kimi-k3"},
        "status": {
            "status": status,
            "nodes": [{"name": n, "status": s, "cliqueID": "c1", "ipAddress": "10.0.0.1"} for n, s in nodes.items()],
        },
    }


def _cluster(*extra: dict[str, Any]) -> tuple[RecordedApi, dict[str, Any]]:
    lws = _lws_v08()
    revision = new_revision(lws, 1, version="v0.8.0")
    key = revision["metadata"]["labels"][REVISION_KEY]
    return RecordedApi([lws, revision, *_pods(key), *extra]), lws


def test_each_group_shows_its_compute_domain_and_each_trays_health() -> None:
    domain = _domain("NotReady", {"gb300-0": "Ready", "gb300-1": "Ready", "gb300-2": "Ready", "gb300-3": "NotReady"})
    nodes = [_node("gb300-0"), _node("gb300-1"), _node("gb300-2", fault=True, guard_cordoned=True), _node("gb300-3")]
    api, lws = _cluster(domain, *nodes)
    report = describe(api, load_profile(PROFILE), [lws], "")
    [group] = report["groups"]
    assert group["group"] == "0"
    assert group["compute_domain"] == {"name": CD_NAME, "status": "NotReady", "trays_ready": 3, "trays": 4}
    health = {t["node"]: t for t in group["trays"]}
    assert [health[f"gb300-{i}"]["health"] for i in range(4)] == ["healthy", "healthy", "sick", "sick"]
    assert health["gb300-2"]["faults"] == ["GpuNvlinkWatch: GpuNvlinkWatchIsNotHealthy: link 7"]
    assert (health["gb300-2"]["cordoned"], health["gb300-2"]["guard_cordoned"]) == (True, True)
    assert health["gb300-3"]["faults"] == [f"ComputeDomain {CD_NAME} reports the node NotReady"]
    assert health["gb300-3"]["cordoned"] is False

    console = Console(width=200, record=True)
    console.print(kubernetes_status_view(report))
    text = console.export_text()
    assert "GROUP  COMPUTEDOMAIN" in text
    assert "NotReady (3/4 trays Ready)" in text
    assert "gb300-2 sick (GpuNvlinkWatch: GpuNvlinkWatchIsNotHealthy: link 7) cordoned by guard" in text
    assert f"gb300-3 sick (ComputeDomain {CD_NAME} reports the node NotReady)" in text
    assert "gb300-0 healthy" in text


def test_without_a_compute_domain_or_a_readable_node_it_says_so() -> None:
    api, lws = _cluster(_node("gb300-0"), _node("gb300-1"))  # gb300-2 and -3 unreadable (no Node recorded)
    report = describe(api, load_profile(PROFILE, ["kubernetes.compute_domain=false"]), [lws], "")
    [group] = report["groups"]
    assert group["compute_domain"] is None
    assert [t["health"] for t in group["trays"]] == ["healthy", "healthy", "unknown", "unknown"]
    console = Console(width=200, record=True)
    console.print(kubernetes_status_view(report))
    assert "0      -              gb300-0 healthy" in console.export_text()


class CountingApi(RecordedApi):
    """RecordedApi that counts its Node gets and, with `list_nodes=False`, refuses to list Nodes (as RBAC refuses a
    user with `get` but not `list` on them)."""

    def __init__(self, objects: list[dict[str, Any]], *, list_nodes: bool = True) -> None:
        super().__init__(objects)
        self.list_nodes = list_nodes
        self.node_gets = 0

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """As RecordedApi, counting Node gets."""
        self.node_gets += kind == "Node"
        return super().get(api_version, kind, name, namespace)

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """As RecordedApi; a Node list refused unless `list_nodes`."""
        if kind == "Node" and not self.list_nodes:
            raise K3DeployError("list Node: forbidden")
        return super().list(api_version, kind, namespace, label_selector=label_selector)


def test_the_trays_nodes_are_read_by_one_list_not_a_get_each() -> None:
    recorded, lws = _cluster(*(_node(f"gb300-{i}") for i in range(4)))
    api = CountingApi(recorded.objects)
    report = describe(api, load_profile(PROFILE, ["kubernetes.compute_domain=false"]), [lws], "")
    assert api.node_gets == 0
    assert [kind for kind, _ in api.selectors].count("Node") == 1
    assert {p["clique"] for p in report["pods"]} == {"c1"}


def test_a_user_who_may_get_but_not_list_nodes_still_sees_the_cliques() -> None:
    recorded, lws = _cluster(*(_node(f"gb300-{i}") for i in range(4)))
    api = CountingApi(recorded.objects, list_nodes=False)
    report = describe(api, load_profile(PROFILE, ["kubernetes.compute_domain=false"]), [lws], "")
    assert api.node_gets == 4
    assert {p["clique"] for p in report["pods"]} == {"c1"}
