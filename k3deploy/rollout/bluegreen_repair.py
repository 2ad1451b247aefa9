"""What a blue-green upgrade (rollout/bluegreen.py) leaves when it is cut short, and putting it right.

- A run interrupted past the switch leaves the old group (a whole second set of GPUs) and the preview Services beside
  the serving colour; one interrupted before it leaves the new group. The next `up` that starts no blue-green of its
  own removes whatever of the other colour and of the previews carries the release's mark.
- An abandoned roll (a failure before the switch) re-applies the previous revision's other objects, the profile
  ConfigMap among them, so the cluster records the revision that still serves and not the rejected one.
- An apply that fails part way (an API 5xx after the new group was created) is a rollout failure: the pipeline rolls
  it back, as the README promises, instead of leaving the new group running beside the old.
"""

from __future__ import annotations

from typing import Any

from k3deploy.errors import K3DeployError, RolloutFailed, RolloutTimeout
from k3deploy.rollout import rollback as history
from k3deploy.rollout.apply import apply_objects
from k3deploy.rollout.bluegreen import Plan, leftovers
from k3deploy.rollout.colours import lws_of
from k3deploy.rollout.diagnosis import Diagnosis


def clear_leftovers(target: Any, profile: Any, objects: list[dict[str, Any]]) -> list[str]:
    """Remove the other colour's LeaderWorkerSet and the preview Services a cut-short blue-green left (k3deploy's
    only); what was deleted."""
    found = [
        obj
        for obj in leftovers(target.api, profile, objects)
        if target.api.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"])
    ]
    if not found:
        return []
    removal = history.remove(target.api, found, target.view.note, label="blue-green leftover: ")
    serving = lws_of(objects)
    for obj in found:
        if obj["kind"] == "LeaderWorkerSet" and (
            serving is None or obj["metadata"]["name"] != serving["metadata"]["name"]
        ):
            target._waiter(profile).wait_pods_gone(obj["metadata"]["name"])
    return removal.deleted


def restore_others(target: Any, previous: list[dict[str, Any]]) -> list[str]:
    """Re-apply the previous revision's objects but its LeaderWorkerSet (which kept serving) and Jobs: what changed."""
    done = []
    # Not its Jobs either: a Job re-applied from another template is run again.
    others = [obj for obj in previous if obj.get("kind") not in ("LeaderWorkerSet", "Job")]
    for applied in apply_objects(target.api, others, force=True):
        if applied.changed:
            done.append(f"{applied.action} {applied.key}")
            target.view.note(f"  rollback: {applied.action} {applied.key}")
    return done


def as_rollout_failure(exc: K3DeployError, bg: Plan) -> K3DeployError:
    """A failed blue-green apply as a rollout failure (the pipeline rolls those back), keeping its exit code."""
    if isinstance(exc, (RolloutFailed, RolloutTimeout)):
        return exc
    failed = RolloutFailed(
        f"blue-green apply of {bg.new} failed: {exc.message}",
        Diagnosis(f"LeaderWorkerSet/{bg.new}", "ApplyFailed", exc.message),
        hint=exc.hint or "the new group is removed and the live group keeps serving; re-run once the API answers",
    )
    failed.exit_code = exc.exit_code
    return failed
