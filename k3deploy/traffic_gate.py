"""The traffic gate: a leader pod serves user traffic only once a smoke gate passed on it (pure names and rules).

The API Service and the InferencePool select leaders by `k3deploy/gated: "true"` as well as by name and worker index
(render/), so a new group's leader, which LeaderWorkerSet creates without it, takes no traffic until its gate marks it
(targets/kubernetes/marks.py). A pod re-created by LWS (a restart, an eviction, a new template) is a new pod without
the label: it is out of traffic again until it is gated again, or, with `smoke.gate_restarts: false`, until its
template revision is one a gate already passed (recorded on the LeaderWorkerSet, `GATED_REVISION_ANNOTATION`), when
the mark is copied without a smoke. Between two `up`s the in-cluster guard does this (targets/kubernetes/regate.py):
each pass, every Ready leader without the mark is smoked by its pod address and marked when it passes, or marked
without a smoke under `smoke.gate_restarts: false`; it only ever adds the mark, so it never takes a healthy leader
out of traffic and never rolls anything back.

A label, not a readiness gate: readiness is what LWS's rolling update and k3deploy's own waits read (a group ready,
the next one goes), so a readiness gate would hold LWS and every wait hostage to the smoke; a label only decides who
gets traffic, and a leader that is Ready but unmarked is visible as such (`kubectl get pods -L k3deploy/gated`).
"""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_INDEX_LABEL, TEMPLATE_REVISION_LABEL

#: The label a passed gate puts on a leader pod; the API Service and the InferencePool select it.
GATED_LABEL = "k3deploy/gated"
GATED_VALUE = "true"
#: The LeaderWorkerSet annotation naming the template revision (LWS's template-revision-hash) a gate last passed on:
#: with `smoke.gate_restarts: false` a re-created leader of that revision is marked without a smoke.
GATED_REVISION_ANNOTATION = "k3deploy/gated-revision"
#: The field manager of the mark (apart from k3deploy's apply, which never renders the label on a pod).
MARK_MANAGER = "k3deploy-gate"
#: Seconds before the guard smokes again a leader whose re-gate failed (it stays out of traffic meanwhile): a broken
#: leader is not hammered with a smoke every pass.
REGATE_RETRY_S = 300.0
#: The longest one re-gate smoke runs (smoke.overall_timeout_s, when lower, stays): the guard's fault passes wait
#: while it runs, so a leader that hangs must not hold a sick tray's handling for the smoke's full budget.
REGATE_SMOKE_S = 600.0
#: What the guard's re-gate did with one leader out of traffic: marked after a smoke passed, marked without a smoke
#: (a restart of a revision a gate passed on, `smoke.gate_restarts: false`), its smoke failed, not smoked again yet
#: after a failure, or what a dry run would do.
LABELLED, COPIED, FAILED, DEFERRED, WOULD = "labelled", "copied", "failed", "deferred", "would"


@dataclass(frozen=True)
class Unmarked:
    """A ready leader without the mark: its group, its pod's uid and name, and whether it is marked without a smoke
    (`copies_mark`)."""

    group: int
    uid: str
    pod: str
    copy: bool


@dataclass(frozen=True)
class Regated:
    """What the guard's re-gate did with one Ready leader out of traffic: `outcome` one of LABELLED, COPIED,
    FAILED, DEFERRED, WOULD, and the sentence that says it."""

    lws: str
    pod: str
    outcome: str
    detail: str

    @property
    def marked(self) -> bool:
        """Whether the leader now takes traffic."""
        return self.outcome in (LABELLED, COPIED)

    def describe(self) -> str:
        """One line of the guard's log and report."""
        return f"leader {self.pod}: {self.detail}"


def retry_due(failed_at: float | None, now: float, retry_s: float = REGATE_RETRY_S) -> bool:
    """Whether a leader is smoked this pass: never failed a re-gate, or its last failure is `retry_s` old."""
    return failed_at is None or now - failed_at >= retry_s


def gate_selector(gated: bool) -> dict[str, str]:
    """What a selector of serving leaders adds: the mark when the profile gates traffic, nothing otherwise."""
    return {GATED_LABEL: GATED_VALUE} if gated else {}


def selects_gated(selector: dict[str, str] | None) -> bool:
    """Whether a Service's (or pool's) selector admits only marked leaders."""
    return (selector or {}).get(GATED_LABEL) == GATED_VALUE


def without_gate(selector: dict[str, str]) -> dict[str, str]:
    """A selector with the mark left out (a blue-green preview selects the new group's leader before its gate)."""
    return {k: v for k, v in selector.items() if k != GATED_LABEL}


def is_marked(pod: KubeObject) -> bool:
    """Whether a pod carries the mark."""
    return bool(((pod.get("metadata") or {}).get("labels") or {}).get(GATED_LABEL) == GATED_VALUE)


def group_of(pod: KubeObject) -> int:
    """The group index of a LeaderWorkerSet pod."""
    return int(((pod.get("metadata") or {}).get("labels") or {}).get(GROUP_INDEX_LABEL, "0"))


def revision_of(pod: KubeObject) -> str:
    """The LWS template revision a pod was made from ("" when it carries none)."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL) or "")


def copies_mark(pod: KubeObject, gated_revision: str | None, gate_restarts: bool) -> bool:
    """Whether an unmarked leader gets the mark without a smoke: only with `gate_restarts` off, and only when it runs
    the template revision a gate already passed on (a restart or an eviction of a gated group, not a new template)."""
    return not gate_restarts and bool(gated_revision) and revision_of(pod) == gated_revision


def mark_object(pod: KubeObject) -> KubeObject:
    """The server-side apply that marks `pod`: its uid is a precondition, so a pod re-created since it was judged
    (same name, new uid) is refused by the API server instead of inheriting a gate it never passed."""
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "labels": {GATED_LABEL: GATED_VALUE},
        },
    }


def revision_object(lws: KubeObject, revision: str) -> KubeObject:
    """The server-side apply that records `revision` as the one a gate last passed on, on the LeaderWorkerSet."""
    meta = lws["metadata"]
    return {
        "apiVersion": lws["apiVersion"],
        "kind": lws["kind"],
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "annotations": {GATED_REVISION_ANNOTATION: revision},
        },
    }
