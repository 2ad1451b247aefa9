"""`plan.reachable`: every step a strategy's plan may run on a set, whatever is live (what preflight's access review
is derived from, preflight/access.py). Pure: no cluster."""

from __future__ import annotations

from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.rollout import plan as p

PROFILE = "kimi-k3-gb300-tp16"


def _kinds(objects: list[dict[str, Any]], strategy: p.Strategy) -> set[str]:
    return {type(s).__name__ for s in p.reachable(objects, strategy, PROFILE)}


def test_a_rolling_up_of_two_groups_may_walk_them_and_remove_leftovers() -> None:
    objects = rendered_objects(load_profile(PROFILE, ["parallel.replicas=2"]))
    assert {"WaitGroup", "SmokeGroup", "RecordGate", "RemoveLeftovers", "Wait", "RecordRevision"} <= _kinds(
        objects, p.UP_STRATEGY
    )
    assert "Switch" not in _kinds(objects, p.UP_STRATEGY)
    # Without a gate to pass (`up --skip-smoke`), no walk.
    assert not {"WaitGroup", "SmokeGroup"} & _kinds(objects, p.Strategy())


def test_one_group_is_never_walked_and_blue_green_may_switch_it() -> None:
    objects = rendered_objects(load_profile(PROFILE))
    assert "WaitGroup" not in _kinds(objects, p.UP_STRATEGY)
    blue_green = _kinds(objects, p.Strategy("blue-green", group_smoke=True))
    assert {"Switch", "Delete", "WaitGone", "SmokeGroup"} <= blue_green


def test_what_a_command_never_runs_is_not_reachable() -> None:
    objects = rendered_objects(load_profile(PROFILE, ["parallel.replicas=2"]))
    assert _kinds(objects, p.Strategy(wait=False)) == {"Begin", "Apply", "RecordRevision", "RemoveLeftovers"}
    assert _kinds(objects, p.Strategy(diff=True)) == {"Begin", "Diff"}
