"""The Argo CD health check for LeaderWorkerSet, run by a real Lua 5.1 interpreter the way Argo CD runs it.

Argo CD (util/lua/lua.go, runLua) runs health scripts in gopher-lua, a Lua 5.1: the script is a chunk that
reads the global `obj` (the live object) and returns a table with `status` and `message`. Only the base,
table and package libraries and a safe `os` (`time`, `date`: util/lua/oslib_safe.go) are open unless
`resource.customizations.useOpenLibs.<group>_<kind>` is true, which opens the standard libraries (the safe
`os` still replaces the real one). The status objects below are shaped like the LWS controller's
(kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go: updateStatus, makeCondition, setCondition).
"""

from __future__ import annotations

import calendar
from typing import Any

import pytest
import yaml
from lupa import lua51

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from tests.conftest import REPO_ROOT

PATCH = REPO_ROOT / "gitops" / "argocd" / "argocd-cm-patch.yaml"
HEALTH_KEY = "resource.customizations.health.leaderworkerset.x-k8s.io_LeaderWorkerSet"
OPEN_LIBS_KEY = "resource.customizations.useOpenLibs.leaderworkerset.x-k8s.io_LeaderWorkerSet"
NOW = calendar.timegm((2026, 3, 1, 12, 0, 0))  # after Feb 29 of a leap year: the date arithmetic is exercised
DEADLINE = "k3deploy/progress-deadline-seconds"


def stamp(seconds_ago: int) -> str:
    """A Kubernetes timestamp `seconds_ago` before NOW."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def health(obj: dict[str, Any], *, open_libs: bool = True) -> dict[str, str]:
    """Run the shipped script on `obj` in a Lua 5.1 set up like Argo CD's VM; return {status, message}."""
    script = yaml.safe_load(PATCH.read_text())["data"][HEALTH_KEY]
    lua = lua51.LuaRuntime(register_eval=False)
    sandbox = lua.execute(
        """
        local now, open = ...
        local date = os.date
        os = {time = function(t) if t == nil then return now end error("os.time(table) not used") end, date = date}
        if not open then
          debug.setmetatable("", nil)  -- no string library: ("x"):match fails as in Argo CD's closed VM
          string, math, io, debug, coroutine = nil, nil, nil, nil, nil
        end
    """,
        NOW,
        open_libs,
    )
    assert sandbox is None
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(script)
    return {"status": result["status"], "message": result["message"]}


def condition(kind: str, generation: int, seconds_ago: int = 60, status: str = "True") -> dict[str, Any]:
    """A condition as makeCondition writes it."""
    reason, message = {
        "Available": ("AllGroupsReady", "All replicas are ready"),
        "Progressing": ("GroupsProgressing", "Replicas are progressing"),
        "UpdateInProgress": ("GroupsUpdating", "Rolling Upgrade is in progress"),
    }[kind]
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": stamp(seconds_ago),
        "observedGeneration": generation,
    }


def lws(
    generation: int,
    status: dict[str, Any] | None,
    *,
    replicas: int = 1,
    deadline: int | None = 10800,
    observed: bool = True,
) -> dict[str, Any]:
    """A LeaderWorkerSet with `status` (zero counts omitted, as omitempty does); observed=False: an LWS < v0.9."""
    meta: dict[str, Any] = {"name": "kimi-k3-gb300-tp16", "namespace": "kimi-k3", "generation": generation}
    if deadline is not None:
        meta["annotations"] = {DEADLINE: str(deadline)}
    obj: dict[str, Any] = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 4}},
    }
    if status is not None:
        status = {k: v for k, v in status.items() if v not in (0, None)}
        status["hpaPodSelector"] = (
            "leaderworkerset.sigs.k8s.io/name=kimi-k3-gb300-tp16,leaderworkerset.sigs.k8s.io/worker-index=0"
        )
        if not observed:
            status.pop("observedGeneration", None)
            for c in status.get("conditions", []):
                c.pop("observedGeneration", None)
        obj["status"] = status
    return obj


def test_patch_is_an_argocd_cm_merge_patch() -> None:
    patch = yaml.safe_load(PATCH.read_text())
    assert set(patch) == {"data"} and set(patch["data"]) == {HEALTH_KEY, OPEN_LIBS_KEY}
    assert patch["data"][OPEN_LIBS_KEY] == "true"  # ConfigMap data are strings; Argo CD ParseBools it


def test_no_status_yet_is_progressing() -> None:
    assert health(lws(1, None))["status"] == "Progressing"


def test_group_starting_is_progressing() -> None:
    obj = lws(
        1,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 0,
            "observedGeneration": 1,
            "conditions": [condition("Progressing", 1)],
        },
    )
    assert health(obj) == {
        "status": "Progressing",
        "message": "Waiting for groups to become ready: 0 of 1 group(s) ready, 1 updated",
    }


def test_available_at_the_current_generation_is_healthy() -> None:
    obj = lws(
        3,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 3,
            "conditions": [condition("Progressing", 3, status="False"), condition("Available", 3)],
        },
    )
    assert health(obj) == {"status": "Healthy", "message": "All 1 group(s) updated and ready"}


def test_stale_status_after_a_spec_change_is_progressing() -> None:
    # Argo CD just applied generation 4; the controller has not reconciled it: the Available is generation 3's.
    obj = lws(
        4,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 3,
            "conditions": [condition("Available", 3)],
        },
    )
    assert health(obj) == {
        "status": "Progressing",
        "message": "Waiting for the controller to observe generation 4 (status is of generation 3)",
    }


def test_condition_of_an_older_generation_does_not_count() -> None:
    obj = lws(
        4,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "observedGeneration": 4,
            "conditions": [condition("Available", 3)],
        },
    )
    assert health(obj)["status"] == "Progressing"


def test_rolling_update_is_progressing_until_its_deadline_then_degraded() -> None:
    def updating(seconds_ago: int, **kw: Any) -> dict[str, Any]:
        return lws(
            2,
            {
                "replicas": 1,
                "updatedReplicas": 0,
                "readyReplicas": 0,
                "observedGeneration": 2,
                "conditions": [
                    condition("Available", 2, status="False"),
                    condition("UpdateInProgress", 2, seconds_ago),
                    condition("Progressing", 2, seconds_ago),
                ],
            },
            **kw,
        )

    assert health(updating(600)) == {
        "status": "Progressing",
        "message": "Rolling update in progress: 0 of 1 group(s) ready, 0 updated",
    }
    assert health(updating(4 * 3600)) == {
        "status": "Degraded",
        "message": "UpdateInProgress (GroupsUpdating) for 14400s, past the 10800s deadline: 0 of 1 group(s) ready, 0 updated",
    }
    assert (
        health(updating(4 * 3600, deadline=None))["status"] == "Progressing"
    )  # someone else's LWS: no deadline, never Degraded
    assert (
        health(updating(4 * 3600), open_libs=False)["status"] == "Progressing"
    )  # closed VM: no timestamps, still no error


def test_group_lost_after_being_healthy_is_progressing_then_degraded() -> None:
    obj = lws(
        1,
        {
            "replicas": 1,
            "updatedReplicas": 1,
            "observedGeneration": 1,
            "conditions": [condition("Available", 1, 5 * 3600, status="False"), condition("Progressing", 1, 5 * 3600)],
        },
    )
    assert health(obj)["status"] == "Degraded"
    obj["status"]["conditions"][1]["lastTransitionTime"] = stamp(30)
    assert health(obj)["status"] == "Progressing"


def test_surplus_groups_are_progressing() -> None:
    obj = lws(
        5,
        {
            "replicas": 2,
            "updatedReplicas": 1,
            "readyReplicas": 2,
            "observedGeneration": 5,
            "conditions": [condition("Available", 5)],
        },
    )
    assert health(obj)["message"] == "Waiting for surplus groups to go: 2 exist, 1 wanted"


@pytest.mark.parametrize(
    "counts,expected",
    [
        ({"replicas": 1, "updatedReplicas": 0, "readyReplicas": 1}, "Progressing"),
        ({"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}, "Healthy"),
    ],
)
def test_lws_before_v0_9_without_observed_generation(counts: dict[str, int], expected: str) -> None:
    obj = lws(2, {**counts, "observedGeneration": 2, "conditions": [condition("Available", 2)]}, observed=False)
    assert "observedGeneration" not in obj["status"]
    assert health(obj)["status"] == expected


def test_rendered_lws_carries_the_deadline_the_check_reads() -> None:
    profile = load_profile("kimi-k3-gb300-tp16")
    [lws_obj] = [m.obj for m in build(profile) if m.kind == "LeaderWorkerSet"]
    assert lws_obj["metadata"]["annotations"][DEADLINE] == str(profile.kubernetes.rollout_timeout_s)
