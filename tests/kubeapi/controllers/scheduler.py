"""A scheduler: binds pending pods to nodes that pass the filters k3deploy's pods meet (unschedulable nodes,
taints, nodeSelector / required node affinity, allocatable resources, required pod (anti-)affinity by topology),
and reports unschedulable pods the way kube-scheduler does.

One pod at a time, oldest first, as kube-scheduler's queue does: nothing is gang-scheduled, so two groups whose
leaders land in one clique with room for only one group both wait forever, as on a real cluster. Among feasible
nodes the InterPodAffinity score decides first (kubernetes pkg/scheduler/framework/plugins/interpodaffinity/
scoring.go: each preferred term adds its weight, or for anti-affinity subtracts it, on every node in a topology
domain holding a pod the term selects), then the most free GPUs (NodeResourcesFit LeastAllocated), then the name
(kube-scheduler breaks ties at random; a fixed order keeps tests deterministic, and the name order is the one
that puts two leaders into the same clique when nothing steers them apart). Affinity terms take `matchLabelKeys`
and `mismatchLabelKeys` as kube-scheduler merges them into the selector (`key in (value)` / `key notin (value)`
with the incoming pod's values; pkg/scheduler/framework/types.go newAffinityTerm).
"""

from __future__ import annotations

import copy
import re
from collections import Counter

from tests.kubeapi.apply import now
from tests.kubeapi.controllers.base import Controller, set_condition
from tests.kubeapi.controllers.events import record
from tests.kubeapi.controllers.resourceclaims import waiting_for_claim
from tests.kubeapi.selectors import match_label_selector

_SUFFIX = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}


def quantity(value: object) -> float:
    """A Kubernetes resource quantity ("500m", "16Gi", "4", 1e9) as a number."""
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", str(value).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"not a quantity: {value!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def pod_requests(pod: dict) -> dict[str, float]:
    """Summed container requests (limits stand in for missing requests, as the API server defaults them)."""
    total: Counter[str] = Counter()
    for container in pod.get("spec", {}).get("containers", []):
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            total[name] += quantity(value)
    return dict(total)


def _terminal(pod: dict) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def _node_affinity_ok(pod: dict, node: dict) -> bool:
    labels = node["metadata"].get("labels") or {}
    for key, value in (pod["spec"].get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_node_expr(expr, labels) for expr in term.get("matchExpressions") or []) for term in terms)


def _node_expr(expr: dict, labels: dict) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels:
        have, want = int(labels[key]), int(values[0])
        return have > want if op == "Gt" else have < want
    return False


def _untolerated_taint(pod: dict, node: dict) -> dict | None:
    tolerations = pod["spec"].get("tolerations") or []
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint["key"]
    return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")


class Scheduler(Controller):
    """Binds pods whose schedulerName is default-scheduler; marks the rest PodScheduled=False Unschedulable."""

    name = "default-scheduler"

    def reconcile(self) -> None:
        """One scheduling pass over the pending pods, oldest first."""
        pods = self.store.list("pods")
        pending = [
            p
            for p in pods
            if not p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and p["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
        ]
        if not pending:
            return
        nodes = {n["metadata"]["name"]: n for n in self.store.list("nodes")}
        bound = [p for p in pods if p["spec"].get("nodeName") and not _terminal(p)]
        for pod in pending:
            if waiting_for_claim(pod):
                continue  # DynamicResources PreEnqueue: not even tried, and no condition is written
            problem = self._volume_problem(pod)
            if problem:
                self._unschedulable(pod, f"0/{len(nodes)} nodes are available: {problem}.")
                continue
            verdicts = {name: self._filter(pod, node, nodes, bound) for name, node in nodes.items()}
            feasible = [name for name, reasons in verdicts.items() if not reasons]
            if feasible:
                chosen = min(
                    feasible,
                    key=lambda n: (
                        -self._preference(pod, nodes[n], nodes, bound),
                        -self._free(nodes[n], bound).get("nvidia.com/gpu", 0),
                        n,
                    ),
                )
                self._bind(pod, chosen)
                pod["spec"]["nodeName"] = chosen
                bound.append(pod)
            else:
                self._unschedulable(pod, self.message(len(nodes), verdicts))

    def _volume_problem(self, pod: dict) -> str | None:
        """The PreFilter verdict on the pod's claims: missing, or unbound though their class binds at once."""
        for volume in pod["spec"].get("volumes") or []:
            name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not name:
                continue
            claim = self.store.get("persistentvolumeclaims", name, pod["metadata"]["namespace"])
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if claim.get("status", {}).get("phase") != "Bound":
                sc = self.store.get("storageclasses", claim["spec"].get("storageClassName") or "")
                if sc is None or sc.get("volumeBindingMode", "Immediate") == "Immediate":
                    return "pod has unbound immediate PersistentVolumeClaims"
        return None

    @staticmethod
    def message(total: int, verdicts: dict[str, list[str]]) -> str:
        """kube-scheduler's FitError text: "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, ..."."""
        if total == 0:
            return "no nodes available to schedule pods"
        counts = Counter(reason for reasons in verdicts.values() for reason in reasons)
        parts = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"0/{total} nodes are available: {', '.join(parts)}."

    def _free(self, node: dict, bound: list[dict]) -> dict[str, float]:
        free = {k: quantity(v) for k, v in (node.get("status", {}).get("allocatable") or {}).items()}
        for pod in bound:
            if pod["spec"].get("nodeName") == node["metadata"]["name"]:
                for name, amount in pod_requests(pod).items():
                    free[name] = free.get(name, 0) - amount
        return free

    def _filter(self, pod: dict, node: dict, nodes: dict[str, dict], bound: list[dict]) -> list[str]:
        """The reasons this node is rejected (empty: it fits), in kube-scheduler's filter order."""
        if node.get("spec", {}).get("unschedulable"):
            return ["node(s) were unschedulable"]
        taint = _untolerated_taint(pod, node)
        if taint is not None:
            shown = f"{taint['key']}: {taint['value']}" if taint.get("value") else taint["key"]
            return [f"node(s) had untolerated taint {{{shown}}}"]
        if not _node_affinity_ok(pod, node):
            return ["node(s) didn't match Pod's node affinity/selector"]
        free = self._free(node, bound)
        short = [
            f"Insufficient {name}"
            for name, amount in sorted(pod_requests(pod).items())
            if amount > 0 and free.get(name, 0) < amount - 1e-9
        ]
        if short:
            return short
        affinity = pod["spec"].get("affinity") or {}
        for term in (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if not self._affinity_term_ok(pod, node, nodes, bound, term):
                return ["node(s) didn't match pod affinity rules"]
        for term in (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if self._matching_domains(pod, nodes, bound, term) & {self._domain(node, term)} - {None}:
                return ["node(s) didn't match pod anti-affinity rules"]
        return []

    def _preference(self, pod: dict, node: dict, nodes: dict[str, dict], bound: list[dict]) -> int:
        """InterPodAffinity's raw score of `node` for the incoming pod's preferred terms (affinity +weight,
        anti-affinity -weight when the node's domain holds a pod the term selects)."""
        affinity = pod["spec"].get("affinity") or {}
        score = 0
        for kind, sign in (("podAffinity", 1), ("podAntiAffinity", -1)):
            for weighted in (affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
                term = weighted["podAffinityTerm"]
                here = self._domain(node, term)
                if here is not None and here in self._matching_domains(pod, nodes, bound, term):
                    score += sign * int(weighted["weight"])
        return score

    @staticmethod
    def _selector(pod: dict, term: dict) -> dict:
        selector = copy.deepcopy(term.get("labelSelector") or {})
        labels = pod["metadata"].get("labels") or {}
        for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
            for key in term.get(field) or []:
                if key in labels:
                    selector.setdefault("matchExpressions", []).append(
                        {"key": key, "operator": operator, "values": [labels[key]]}
                    )
        return selector

    @staticmethod
    def _domain(node: dict, term: dict) -> str | None:
        return (node["metadata"].get("labels") or {}).get(term["topologyKey"])

    def _matching_domains(self, pod: dict, nodes: dict[str, dict], bound: list[dict], term: dict) -> set[str | None]:
        selector = self._selector(pod, term)
        namespaces = term.get("namespaces") or [pod["metadata"]["namespace"]]
        domains = set()
        for other in bound:
            if other["metadata"]["namespace"] in namespaces and match_label_selector(
                selector, other["metadata"].get("labels") or {}
            ):
                node = nodes.get(other["spec"]["nodeName"])
                if node is not None:
                    domains.add(self._domain(node, term))
        return domains

    def _affinity_term_ok(self, pod: dict, node: dict, nodes: dict[str, dict], bound: list[dict], term: dict) -> bool:
        here = self._domain(node, term)
        if here is None:
            return False
        domains = self._matching_domains(pod, nodes, bound, term)
        if domains:
            return here in domains
        # The first pod of a group may go anywhere its own labels satisfy the term (kube-scheduler's rule).
        return match_label_selector(self._selector(pod, term), pod["metadata"].get("labels") or {})

    def _bind(self, pod: dict, node: str) -> None:
        meta = pod["metadata"]
        stamp = now()

        def assign(obj: dict) -> None:
            obj["spec"]["nodeName"] = node

        def scheduled(obj: dict) -> None:
            set_condition(
                obj.setdefault("status", {}).setdefault("conditions", []), "PodScheduled", "True", "", "", stamp
            )
            for cond in obj["status"]["conditions"]:
                if cond["type"] == "PodScheduled":
                    cond.pop("reason", None)
                    cond.pop("message", None)

        self.store.update("pods", meta["name"], meta["namespace"], assign, manager=self.name)
        self.store.update("pods", meta["name"], meta["namespace"], scheduled, subresource="status", manager=self.name)
        record(
            self.store,
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}",
            self.name,
        )

    def _unschedulable(self, pod: dict, message: str) -> None:
        meta = pod["metadata"]
        current = next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), {})
        if current.get("status") == "False" and current.get("message") == message:
            return

        def mark(obj: dict) -> None:
            set_condition(
                obj.setdefault("status", {}).setdefault("conditions", []),
                "PodScheduled",
                "False",
                "Unschedulable",
                message,
                now(),
            )

        self.store.update("pods", meta["name"], meta["namespace"], mark, subresource="status", manager=self.name)
        record(self.store, pod, "Warning", "FailedScheduling", message, self.name)
