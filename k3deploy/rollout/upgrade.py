"""Rolling upgrade of N >= 2 serving groups: one group at a time, each new group smoke-tested by its leader first.

What LeaderWorkerSet does on its own (kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go,
rollingUpdateParameters / rollingUpdatePartition): a changed template is rolled by moving the leader StatefulSet's
partition down from the highest group index, recreating at most maxUnavailable (+ maxSurge) groups at once and moving
on as soon as the recreated groups are *ready* (every pod's readiness probe, vLLM's /health). With k3deploy's
`maxUnavailable: 1, maxSurge: 0` and two or more groups it never takes the last serving group down, but it goes on
to the next group whether or not the new one answers correctly or fast enough: /health says nothing about that.
`rollingUpdateConfiguration.partition` (LWS v0.7.0 and later, api/leaderworkerset/v1/leaderworkerset_types.go) keeps
the groups below it on the old template.

What k3deploy adds (driven from the `up` pipeline, only with a smoke test to gate on): the new template is applied
with partition = replicas, so no group moves; then the partition is lowered one group at a time, N-1 down to 0, and
after each step k3deploy waits until that group's pods carry the new template's revision key and are Ready, then
smoke-tests the group through its leader pod (not the Service, which spreads over every group). Only then does the
next group go. Finally the rendered object (no partition, so 0) is applied. A failed wait or smoke stops the walk with
the groups below the partition still serving the old template; the pipeline then restores the previous revision.

The pure parts are in rollout/groups.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError
from k3deploy.lws import GROUP_INDEX_LABEL as GROUP_LABEL
from k3deploy.lws import NAME_LABEL
from k3deploy.lws import TEMPLATE_REVISION_LABEL as REVISION_LABEL
from k3deploy.redact import redact_url
from k3deploy.report.model import Status
from k3deploy.rollout import forward, gates, in_cluster
from k3deploy.rollout.apply import apply_object
from k3deploy.rollout.currency import template_revision
from k3deploy.rollout.diagnosis import Diagnosis, RolloutFailed, RolloutTimeout
from k3deploy.rollout.groups import (
    group_pods,
    group_state,
    leader_name,
    partitioned,
    replicas_of,
    steps_groups,
)
from k3deploy.smoke.reach import IN_CLUSTER, Reach, unreachable
from k3deploy.smoke.runner import exit_code, run_smoke

#: Seconds between two looks at a rolling group.
POLL_S = 0.5


class GroupRoll:
    """Walks a LeaderWorkerSet's partition down group by group, smoke-testing each new group before the next."""

    def __init__(
        self,
        api: Any,
        namespace: str,
        note: Callable[[str], None],
        *,
        remaining: Callable[[], float | None],
        poll_s: float = POLL_S,
    ) -> None:
        self.api, self.namespace, self.note = api, namespace, note
        self.remaining = remaining
        self.poll_s = poll_s

    def live(self, lws: dict[str, Any]) -> dict[str, Any] | None:
        """The LeaderWorkerSet as the cluster holds it."""
        return self.api.get(lws["apiVersion"], lws["kind"], lws["metadata"]["name"], self.namespace)

    def _current_key(self, lws: dict[str, Any]) -> str:
        live = self.live(lws)
        if live is None:
            return ""
        revisions, _ = self.api.list(
            "apps/v1", "ControllerRevision", self.namespace, label_selector=f"{NAME_LABEL}={lws['metadata']['name']}"
        )
        revision = template_revision(live, revisions)
        return str(((revision or {}).get("metadata") or {}).get("labels", {}).get(REVISION_LABEL, ""))

    def _pods(self, lws: dict[str, Any]) -> list[dict[str, Any]]:
        pods, _ = self.api.list("v1", "Pod", self.namespace, label_selector=f"{NAME_LABEL}={lws['metadata']['name']}")
        return list(pods)

    def outdated(self, lws: dict[str, Any]) -> list[int]:
        """Group indexes whose pods do not all run the current template (highest first)."""
        key = self._current_key(lws)
        pods = self._pods(lws)
        return sorted(
            {
                int(p["metadata"]["labels"].get(GROUP_LABEL, "0"))
                for p in pods
                if not p["metadata"].get("deletionTimestamp") and p["metadata"]["labels"].get(REVISION_LABEL) != key
            },
            reverse=True,
        )

    def walk(
        self,
        lws: dict[str, Any],
        smoke: Callable[[int], None] | None,
        apply: Callable[[dict[str, Any]], None],
        ungated: list[int] | None = None,
    ) -> int:
        """Lower the partition one group at a time; wait for and smoke each new group; end with `lws` as rendered.
        With no group to roll, smoke the groups in `ungated` (no gate passed on the live template: rollout/gates.py).
        Returns how many groups were rolled."""
        name, replicas = lws["metadata"]["name"], replicas_of(lws)
        size = int(((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size", 1))
        rolled = 0
        outdated = self.outdated(lws) if self._wait_key(lws) else []
        if not outdated and smoke is not None:
            for group in ungated or []:
                self._wait_group(lws, group, size)
                self.note(
                    f"  smoke of group {group} through its leader {leader_name(name, group)} (no gate passed yet)"
                )
                smoke(group)
        if outdated:
            for group in range(replicas - 1, -1, -1):
                self.note(f"  rolling group {group} of {name} (partition {group}; groups below keep serving)")
                apply(partitioned(lws, group))
                self._wait_group(lws, group, size)
                rolled += 1
                if smoke is not None:
                    self.note(f"  smoke of group {group} through its leader {leader_name(name, group)}")
                    smoke(group)
        apply(lws)
        return rolled

    def _wait_key(self, lws: dict[str, Any]) -> bool:
        """Wait until the controller has recorded the applied template's revision; False when it never does."""
        while not self._current_key(lws):
            if self._sleep_or_timeout():
                return False
        return True

    def _sleep_or_timeout(self) -> bool:
        left = self.remaining()
        if left is not None and left <= 0:
            return True
        time.sleep(self.poll_s if left is None else min(self.poll_s, left))
        return False

    def _wait_group(self, lws: dict[str, Any], group: int, size: int) -> None:
        name = lws["metadata"]["name"]
        while True:
            key = self._current_key(lws)
            done, fatal = group_state(group_pods(self._pods(lws), name, group), key, size)
            if done:
                self.note(f"  group {group} of {name} is ready on the new template")
                return
            if fatal is not None:
                message = f"group {group} of LeaderWorkerSet {name} failed on the new template: {fatal}"
                raise RolloutFailed(
                    message,
                    Diagnosis(f"LeaderWorkerSet/{name}", "GroupFailed", message),
                    hint="the groups below it still serve the old template; `up` rolls back",
                )
            if self._sleep_or_timeout():
                message = f"group {group} of LeaderWorkerSet {name} was not ready on the new template by the deadline"
                raise RolloutTimeout(
                    message,
                    Diagnosis(f"LeaderWorkerSet/{name}", "Timeout", message),
                    hint="the groups below it still serve the old template; raise --timeout for a slow load",
                )


def smoke_endpoint(profile: Any, endpoint: str, way: Reach | None = None) -> str:
    """Run the profile's smoke test against one endpoint; raise when it does not pass (SmokeUnreachable when it could
    not test the server at all: smoke/reach.py). Returns its verdict line."""
    report = run_smoke(profile, endpoint)
    endpoint = redact_url(endpoint)
    code = exit_code(report)
    where = way.describe() if way is not None else f"at {endpoint}"
    if code != 0:
        failed = [c for c in report.checks if c.status is Status.FAIL]
        why = report.blocked_by or "; ".join(f"{c.name}: {c.detail}" for c in failed) or report.status.value
        message = f"smoke of the new group {where} failed: {why}"
        if code == EXIT_ENVIRONMENT:
            raise unreachable(message, way, "the groups not yet rolled still serve the old template")
        raise K3DeployError(message, hint="the groups not yet rolled still serve the old template", exit_code=code)
    return f"{where}: {len(report.checks)} checks, {report.status.value}"


def template_changes(api: Any, live: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether applying `new` over the live LeaderWorkerSet changes its spec (a server dry run bumps the generation)."""
    dry = api.apply(new, force=True, dry_run=True)
    return int(dry["metadata"].get("generation") or 0) != int(live["metadata"].get("generation") or 0)


def hold(target: Any, objects: list[dict[str, Any]], lws_version: str = "0.10.0") -> list[dict[str, Any]]:
    """The set to apply for `up`: when its LeaderWorkerSet is walked group by group (target.options.group_smoke, N >= 2
    live and new), that object with partition = N, so the apply moves no group; remembered on the target for `walk`.
    A template whose walk began but did not gate every group is walked again (rollout/gates.py); a cluster without
    partition is refused before anything is applied."""
    target._held_lws = None
    target._ungated = []
    options = target.options
    if not options.group_smoke or options.dry_run or options.diff or not options.wait:
        return objects
    out = []
    for obj in objects:
        if obj.get("kind") == "LeaderWorkerSet":
            live = target.api.get(
                obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")
            )
            if steps_groups(live, obj) and live is not None:
                release, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
                target._ungated = gates.ungated(target.api, namespace, release, obj)
                if template_changes(target.api, live, obj):
                    gates.check_partition(target.api, obj, lws_version)
                    target._held_lws = obj
                    obj = partitioned(obj, replicas_of(obj))
                elif target._ungated:
                    target._held_lws = obj
        out.append(obj)
    return out


def walk(target: Any, profile: Any) -> None:
    """Roll the held LeaderWorkerSet group by group, smoke-testing each new group by its leader (see the module)."""
    lws = getattr(target, "_held_lws", None)
    if lws is None:
        return
    target._held_lws = None
    namespace = profile.kubernetes.namespace
    gates.record(target.api, namespace, lws["metadata"]["name"], lws, None)

    def apply(obj: dict[str, Any]) -> None:
        apply_object(target.api, obj, force=target.options.force_conflicts)

    def smoke(group: int) -> None:
        if target.options.smoke_where == IN_CLUSTER:
            target.view.note(f"    ok   {in_cluster.gate(target, profile, lws['metadata']['name'], group)}")
        else:
            with forward.reach(target, profile, lws["metadata"]["name"], group) as way:
                target.view.note(f"    ok   {smoke_endpoint(profile, way.url, way)}")
        gates.record(target.api, namespace, lws["metadata"]["name"], lws, group)

    roll = GroupRoll(target.api, namespace, target.view.note, remaining=target.deadline.remaining)
    rolled = roll.walk(lws, smoke, apply, getattr(target, "_ungated", None))
    if rolled:
        target.view.note(
            f"  all {rolled} groups of {lws['metadata']['name']} rolled, each smoke-tested before the next"
        )
