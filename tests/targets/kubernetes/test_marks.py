"""Marking leaders for traffic (targets/kubernetes/marks.py): which ready leaders lack the mark, which of them a
restart of a gated template lets through without a smoke, and a mark that names the pod's uid, refused when the pod
was re-created. The API server's own refusal of a changed uid is met on the real plane
(tests/realk8s/test_marks_uid.py)."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import KubeError, SmokeUnreachable
from k3deploy.lws import API_VERSION
from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.reporter import Reporter
from k3deploy.targets.kubernetes import marks
from k3deploy.traffic_gate import GATED_LABEL, GATED_REVISION_ANNOTATION, MARK_MANAGER, Unmarked

NS = "kimi-k3"


def _pod(group: int, *, marked: bool = False, ready: bool = True, revision: str = "r1", uid: str = "") -> dict:
    labels = {
        "leaderworkerset.sigs.k8s.io/name": "kimi",
        "leaderworkerset.sigs.k8s.io/group-index": str(group),
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
        "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
    }
    if marked:
        labels[GATED_LABEL] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"kimi-{group}", "namespace": NS, "uid": uid or f"u{group}", "labels": labels},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]},
    }


class Api:
    """The pods and the LeaderWorkerSet of one namespace; records each apply with its field manager."""

    def __init__(self, pods: list[dict], annotations: dict[str, str] | None = None) -> None:
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.lws = {
            "apiVersion": API_VERSION,
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "kimi", "namespace": NS, "annotations": annotations or {}},
        }
        self.applied: list[tuple[dict, str]] = []
        self.selectors: list[str | None] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        return self.lws if kind == "LeaderWorkerSet" else self.pods.get(name)

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any) -> tuple[list, str]:
        self.selectors.append(kw.get("label_selector"))
        return list(self.pods.values()), "1"

    def apply(self, obj: dict, *, force: bool = False, dry_run: bool = False, manager: str = "k3deploy") -> dict:
        self.applied.append((obj, manager))
        return obj


def test_only_ready_unmarked_leaders_are_listed_lowest_group_first() -> None:
    api = Api([_pod(2), _pod(1, marked=True), _pod(0), _pod(3, ready=False)])
    found = marks.unmarked(api, NS, "kimi", gate_restarts=True)  # type: ignore[arg-type]
    assert found == [Unmarked(0, "u0", "kimi-0", copy=False), Unmarked(2, "u2", "kimi-2", copy=False)]
    assert api.selectors == ["leaderworkerset.sigs.k8s.io/name=kimi,leaderworkerset.sigs.k8s.io/worker-index=0"]


def test_without_gating_restarts_only_the_gated_revision_is_copied() -> None:
    api = Api([_pod(0, revision="r1"), _pod(1, revision="r2")], {GATED_REVISION_ANNOTATION: "r1"})
    copied = {u.group: u.copy for u in marks.unmarked(api, NS, "kimi", gate_restarts=False)}  # type: ignore[arg-type]
    assert copied == {0: True, 1: False}
    gated = {u.group: u.copy for u in marks.unmarked(api, NS, "kimi", gate_restarts=True)}  # type: ignore[arg-type]
    assert gated == {0: False, 1: False}
    none_recorded = Api([_pod(0, revision="r1")])
    assert [u.copy for u in marks.unmarked(none_recorded, NS, "kimi", gate_restarts=False)] == [False]  # type: ignore[arg-type]


def test_a_mark_names_the_uid_and_records_the_revision_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    api = Api([_pod(0, revision="r7")])
    marks.mark(api, NS, "kimi", 0, "u0", Reporter(interactive=False), record_revision=True)  # type: ignore[arg-type]
    (pod, manager), (lws, lws_manager) = api.applied
    assert manager == lws_manager == MARK_MANAGER
    assert pod["metadata"] == {"name": "kimi-0", "namespace": NS, "uid": "u0", "labels": {GATED_LABEL: "true"}}
    assert lws["metadata"]["annotations"] == {GATED_REVISION_ANNOTATION: "r7"}
    assert capsys.readouterr().err.splitlines() == ["    leader kimi-0 takes traffic: its gate passed"]
    plain = Api([_pod(0)])
    marks.mark(plain, NS, "kimi", 0, None, Reporter(quiet=True), record_revision=False, why="no gate")  # type: ignore[arg-type]
    assert [o["kind"] for o, _ in plain.applied] == ["Pod"]


def test_a_leader_recreated_since_its_gate_is_not_marked() -> None:
    api = Api([_pod(0, uid="new")])
    with pytest.raises(SmokeUnreachable, match="kimi-0 was re-created while its gate ran"):
        marks.mark(api, NS, "kimi", 0, "old", Reporter(quiet=True), record_revision=True)  # type: ignore[arg-type]
    with pytest.raises(SmokeUnreachable, match="re-created"):
        marks.mark(Api([]), NS, "kimi", 0, None, Reporter(quiet=True), record_revision=True)  # type: ignore[arg-type]
    assert api.applied == []


def test_a_mark_of_a_judged_uid_reads_no_pod_and_a_refused_uid_stays_out_of_traffic() -> None:
    """The leader's uid is known from the list that found it: the apply names it and the API server refuses a pod
    re-created since (KubeError 422, the immutable uid); no get per group."""
    api = Api([_pod(0)])
    gets: list[str] = []
    api.get = lambda v, kind, name, ns=None: gets.append(kind)  # type: ignore[assignment,method-assign,func-returns-value]
    marks.mark(api, NS, "kimi", 0, "u0", Reporter(quiet=True), record_revision=False)  # type: ignore[arg-type]
    assert gets == []
    [(pod, _)] = api.applied
    assert pod["metadata"] == {"name": "kimi-0", "namespace": NS, "uid": "u0", "labels": {GATED_LABEL: "true"}}

    def refuse(obj: dict, **kw: Any) -> dict:
        raise KubeError("uid: field is immutable", status=422)

    api.apply = refuse  # type: ignore[method-assign]
    with pytest.raises(SmokeUnreachable, match=r"kimi-0 changed while it was marked \(422\)"):
        marks.mark(api, NS, "kimi", 0, "old", Reporter(quiet=True), record_revision=False)  # type: ignore[arg-type]


def test_a_live_service_selects_ungated_only_without_the_label_in_its_selector() -> None:
    objects = rendered_objects(load_profile("kimi-k3-gb300-tp16"))

    def live(selector: dict[str, str] | None) -> Any:
        api = Api([])
        api.get = lambda v, kind, name, ns=None: None if selector is None else {"spec": {"selector": selector}}  # type: ignore[method-assign]
        return api

    assert marks.service_ungated(live({"leaderworkerset.sigs.k8s.io/name": "k"}), objects)
    assert not marks.service_ungated(live({"k3deploy/gated": "true"}), objects)
    assert not marks.service_ungated(live(None), objects)  # nothing live yet: a first install
