"""Rolling upgrade of N >= 2 serving groups: one group at a time, each new group smoke-tested by its leader first.

What LeaderWorkerSet does on its own (kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go,
rollingUpdateParameters / rollingUpdatePartition): a changed template is rolled by moving the leader StatefulSet's
partition down from the highest group index, recreating at most maxUnavailable (+ maxSurge) groups at once and moving
on as soon as the recreated groups are *ready* (every pod's readiness probe, vLLM's /health). With k3deploy's
`maxUnavailable: 1, maxSurge: 0` and two or more groups it never takes the last serving group down, but it goes on
to the next group whether or not the new one answers correctly or fast enough: /health says nothing about that.
`rollingUpdateConfiguration.partition` (LWS v0.7.0 and later, api/leaderworkerset/v1/leaderworkerset_types.go) keeps
the groups below it on the old template.

What k3deploy adds (planned by rollout/plan.py `rolling`, only with a smoke test to gate on): the new template is applied
with partition = replicas, so no group moves; then the partition is lowered one group at a time, N-1 down to 0, and
after each step k3deploy waits until that group's pods carry the new template's revision key and are Ready, then
smoke-tests the group through its leader pod (not the Service, which spreads over every group). Only then does the
next group go. Finally the rendered object (no partition, so 0) is applied. A failed wait or smoke stops the walk with
the groups below the partition still serving the old template; the pipeline then restores the previous revision.

This module reads what the plan needs (`read_lws`) and waits for one group (`GroupRoll`); the pure parts are in
rollout/groups.py and rollout/plan.py.
"""

from __future__ import annotations

from collections.abc import Callable

from k3deploy.errors import Diagnosis, RolloutFailed, RolloutTimeout
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.lws import GROUP_INDEX_LABEL as GROUP_LABEL
from k3deploy.lws import NAME_LABEL
from k3deploy.lws import TEMPLATE_REVISION_LABEL as REVISION_LABEL
from k3deploy.reporter import Reporter
from k3deploy.rollout.currency import template_revision
from k3deploy.rollout.groups import group_pods, group_state, steps_groups
from k3deploy.rollout.plan import LiveLws, Strategy
from k3deploy.targets.kubernetes import gates
from k3deploy.targets.kubernetes.poll import poll

#: Seconds between two looks at a rolling group.
POLL_S = 0.5


class GroupRoll:
    """Reads a LeaderWorkerSet's groups: which run an older template, and waiting until one runs the current one."""

    def __init__(
        self,
        api: KubePort,
        namespace: str,
        reporter: Reporter,
        *,
        remaining: Callable[[], float | None],
        poll_s: float = POLL_S,
    ) -> None:
        self.api, self.namespace, self.reporter = api, namespace, reporter
        self.remaining = remaining
        self.poll_s = poll_s

    def live(self, lws: KubeObject) -> KubeObject | None:
        """The LeaderWorkerSet as the cluster holds it."""
        return self.api.get(lws["apiVersion"], lws["kind"], lws["metadata"]["name"], self.namespace)

    def _current_key(self, lws: KubeObject) -> str:
        live = self.live(lws)
        if live is None:
            return ""
        revisions, _ = self.api.list(
            "apps/v1", "ControllerRevision", self.namespace, label_selector=f"{NAME_LABEL}={lws['metadata']['name']}"
        )
        revision = template_revision(live, revisions)
        return str(((revision or {}).get("metadata") or {}).get("labels", {}).get(REVISION_LABEL, ""))

    def _pods(self, lws: KubeObject) -> list[KubeObject]:
        pods, _ = self.api.list("v1", "Pod", self.namespace, label_selector=f"{NAME_LABEL}={lws['metadata']['name']}")
        return list(pods)

    def outdated(self, lws: KubeObject) -> list[int]:
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

    def wait_group(self, lws: KubeObject, group: int) -> None:
        """Until every pod of `group` runs the current template and is Ready; RolloutFailed on a fatal problem of
        a new pod, RolloutTimeout at the deadline."""
        name = lws["metadata"]["name"]
        size = int(((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size", 1))

        def ready() -> bool | None:
            key = self._current_key(lws)
            done, fatal = group_state(group_pods(self._pods(lws), name, group), key, size)
            if done:
                return True
            if fatal is not None:
                message = f"group {group} of LeaderWorkerSet {name} failed on the new template: {fatal}"
                raise RolloutFailed(
                    message,
                    Diagnosis(f"LeaderWorkerSet/{name}", "GroupFailed", message),
                    hint="the groups below it still serve the old template; `up` rolls back",
                )
            return None

        if poll(ready, self.remaining, self.poll_s) is None:
            message = f"group {group} of LeaderWorkerSet {name} was not ready on the new template by the deadline"
            raise RolloutTimeout(
                message,
                Diagnosis(f"LeaderWorkerSet/{name}", "Timeout", message),
                hint="the groups below it still serve the old template; raise --timeout for a slow load",
            )
        self.reporter.note(f"  group {group} of {name} is ready on the new template")


def template_changes(api: KubePort, live: KubeObject, new: KubeObject) -> bool:
    """Whether applying `new` over the live LeaderWorkerSet changes its spec (a server dry run bumps the generation)."""
    dry = api.apply(new, force=True, dry_run=True)
    return int(dry["metadata"].get("generation") or 0) != int(live["metadata"].get("generation") or 0)


def read_lws(api: KubePort, lws: KubeObject | None, strategy: Strategy) -> LiveLws:
    """What the plan builders need of the live LeaderWorkerSet: whether applying `lws` changes it (a server dry run)
    and recreates groups, and which groups no gate passed on. Refuses (exit 3) a group-by-group walk the cluster
    cannot hold, before anything is applied (targets/kubernetes/gates.py)."""
    gated = strategy.group_smoke and strategy.gated
    if lws is None or strategy.dry_run or strategy.diff or not (gated or strategy.name == "blue-green"):
        return LiveLws()
    meta = lws["metadata"]
    live = api.get(lws["apiVersion"], lws["kind"], meta["name"], meta.get("namespace"))
    if live is None:
        return LiveLws()
    walked = gated and steps_groups(live, lws)
    if strategy.name != "blue-green" and not walked:
        return LiveLws(live=live)
    dry = api.apply(lws, force=True, dry_run=True)
    changes = int(dry["metadata"].get("generation") or 0) != int(live["metadata"].get("generation") or 0)
    if not walked:
        return LiveLws(live=live, template_changes=changes)
    ungated = gates.ungated(api, meta.get("namespace"), meta["name"], lws)
    pods_change = False
    if changes:
        gates.check_partition(api, lws)
        template = (dry.get("spec") or {}).get("leaderWorkerTemplate")
        roll = GroupRoll(api, meta.get("namespace"), Reporter(quiet=True), remaining=lambda: None)
        pods_change = template != (live.get("spec") or {}).get("leaderWorkerTemplate") or bool(roll.outdated(lws))
    return LiveLws(live=live, template_changes=changes, pods_change=pods_change, ungated=ungated)
