"""What a blue-green upgrade (targets/kubernetes/bluegreen.py) leaves when it is cut short, and putting it right.

- A run interrupted past the switch leaves the old group (a whole second set of GPUs) and the preview Services beside
  the serving colour; one interrupted before it leaves the new group. The next `up` that starts no blue-green of its
  own removes whatever of the other colour and of the previews carries the release's mark.
- An abandoned roll (a failure before the switch) re-applies the previous revision's other objects, the profile
  ConfigMap among them, so the cluster records the revision that still serves and not the rejected one
  (rollout/undo.py `abandon`).
- An apply that fails part way (an API 5xx after the new group was created) is a rollout failure: the pipeline rolls
  it back, as the deploy guide promises (docs/guide/deploy-gb300.md), instead of leaving the new group running beside the old.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from k3deploy.errors import Diagnosis, K3DeployError, RolloutFailed, RolloutTimeout
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.profile.model import Profile
from k3deploy.reporter import Reporter
from k3deploy.targets.kubernetes import history
from k3deploy.targets.kubernetes.bluegreen import leftovers


def found_leftovers(api: KubePort, profile: Profile, objects: list[KubeObject]) -> list[KubeObject]:
    """The other colour's LeaderWorkerSet and the preview Services a cut-short blue-green left that exist now."""
    return [
        obj
        for obj in leftovers(api, profile, objects)
        if api.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"])
    ]


def clear_leftovers(
    api: KubePort,
    found: list[KubeObject],
    serving: str | None,
    reporter: Reporter,
    waiter: Callable[[], Any],
) -> list[str]:
    """Remove what a cut-short blue-green left (`found`; k3deploy's only) and wait for the other group's pods to go;
    what was deleted."""
    if not found:
        return []
    removal = history.remove(api, found, reporter, label="blue-green leftover: ")
    for obj in found:
        if obj["kind"] == "LeaderWorkerSet" and obj["metadata"]["name"] != serving:
            waiter().wait_pods_gone(obj["metadata"]["name"])
    return removal.deleted


def as_rollout_failure(exc: K3DeployError, new: str) -> K3DeployError:
    """A failed blue-green apply as a rollout failure (the pipeline rolls those back), keeping its exit code."""
    if isinstance(exc, (RolloutFailed, RolloutTimeout)):
        return exc
    failed = RolloutFailed(
        f"blue-green apply of {new} failed: {exc.message}",
        Diagnosis(f"LeaderWorkerSet/{new}", "ApplyFailed", exc.message),
        hint=exc.hint or "the new group is removed and the live group keeps serving; re-run once the API answers",
    )
    failed.exit_code = exc.exit_code
    return failed
