"""A rollout as data: (rendered set, live state, strategy) -> the steps `apply` and `up` run, in order (pure).

A step (rollout/steps.py) names one thing to do: apply objects, wait for them, smoke one group through its leader,
switch the API Service, delete an object, record the revision. The plan builders here decide which steps, from what the cluster
holds (`LiveState`, read once by the target before anything is applied); a runner (targets/kubernetes/runner.py) executes one
step at a time and keeps nothing between them; the pipeline loops over the steps and runs every smoke itself.

- Rolling (`rolling`): with N >= 2 live groups and a gate to pass, a changed LeaderWorkerSet is applied with
  partition = N (no group moves), then walked down one group at a time, each new group waited for and smoke-tested
  by its leader before the next goes (targets/kubernetes/upgrade.py tells what LWS does on its own and why).
- Blue-green (`blue_green`): one group; the new template goes in beside the live one under the other colour, is
  smoke-tested by its leader, takes the API Service, and only then does the old group go (targets/kubernetes/bluegreen.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from k3deploy.lws import leader_name
from k3deploy.rollout.colours import (
    api_service_of,
    gated_service,
    lws_of,
    other,
    preview_name,
    preview_service,
    recoloured,
)
from k3deploy.rollout.groups import partitioned, replicas_of, steps_groups
from k3deploy.rollout.order import WAITED_PHASES, phases
from k3deploy.rollout.steps import (
    APPLY,
    SERVER_DRY_RUN,
    WAIT,
    Apply,
    ApplyAll,
    Begin,
    Delete,
    Diff,
    GateLeaders,
    Note,
    Obj,
    RecordGate,
    RecordRevision,
    RemoveLeftovers,
    SmokeGroup,
    Step,
    StepOutcome,
    Switch,
    Wait,
    WaitAll,
    WaitGone,
    WaitGroup,
)


@dataclass(frozen=True)
class BlueGreen:
    """A blue-green upgrade: the old and new colours, the new colour's set, the one it replaces, the preview Service."""

    old: str
    new: str
    objects: list[Obj]
    old_objects: list[Obj]
    preview: Obj = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """The steps of one command, and what a rollback needs: the set the rollout leaves live, the blue-green."""

    steps: list[Step]
    objects: list[Obj] = field(default_factory=list)
    blue_green: BlueGreen | None = None
    #: What each applied object's line and the summary end with (a server dry run says so).
    suffix: str = ""

    def stage(self, name: str) -> list[Step]:
        """The steps of one stage, in order."""
        return [step for step in self.steps if step.stage == name]


#: What a target that applies and waits in one go runs.
WHOLE = Plan([ApplyAll(), WaitAll()])


@dataclass(frozen=True)
class LiveLws:
    """What the cluster holds of the rendered LeaderWorkerSet (under the colour that serves)."""

    live: Obj | None = None
    #: A server dry run of the rendered object bumps the live generation.
    template_changes: bool = False
    #: Applying it recreates groups: the pod template differs, or some groups still run an older one.
    pods_change: bool = False
    #: Groups (highest first) whose gate has not passed on the rendered template, when a walk began on it.
    ungated: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class LiveState:
    """What the plan builders read from the cluster: the LeaderWorkerSet and a cut-short blue-green's leftovers."""

    lws: LiveLws = field(default_factory=LiveLws)
    leftovers: list[Obj] = field(default_factory=list)
    #: The live API Service selects leaders without the traffic gate's label (a release installed before the gate,
    #: or with smoke.gate_traffic off): its serving leaders are labelled before the gated Service is applied.
    ungated_service: bool = False


@dataclass(frozen=True)
class Strategy:
    """What the command asked for: `up --strategy`, a per-group gate, a dry run or diff, waiting, where smoke runs."""

    name: str = "rolling"
    group_smoke: bool = False
    dry_run: bool = False
    diff: bool = False
    wait: bool = True
    in_cluster_smoke: bool = False

    @property
    def gated(self) -> bool:
        """Whether a walk or a switch may happen: a real, waited rollout."""
        return not (self.dry_run or self.diff) and self.wait


#: What a bare `up` runs: rolling, each group smoke-tested before the next.
UP_STRATEGY = Strategy(group_smoke=True)


def serving(objects: list[Obj]) -> list[Obj]:
    """The objects of the serving phase: what a rollout (or a rollback) waits to be ready."""
    return [obj for phase in phases(objects) if phase.name == "serving" for obj in phase.objects]


def walked(objects: list[Obj], live: LiveLws, strategy: Strategy) -> Obj | None:
    """The LeaderWorkerSet walked group by group, or None: N >= 2 live and rendered groups, a gate to pass, and a
    changed template or groups no gate passed on."""
    lws = lws_of(objects)
    if lws is None or not strategy.group_smoke or not strategy.gated or not steps_groups(live.live, lws):
        return None
    return lws if live.template_changes or live.ungated else None


def rolling(objects: list[Obj], live: LiveLws, strategy: Strategy) -> tuple[list[Obj], list[Step]]:
    """The set to apply (a changed LeaderWorkerSet held at partition = N, so no group moves) and the walk's steps."""
    lws = walked(objects, live, strategy)
    if lws is None:
        return objects, []
    held = partitioned(lws, replicas_of(lws)) if live.template_changes else lws
    return [held if obj is lws else obj for obj in objects], walk(lws, live, gated_service(objects))


def walk(lws: Obj, live: LiveLws, mark: bool = False) -> list[Step]:
    """Lower the partition one group at a time (N-1 down to 0), each new group waited for, smoked by its leader,
    marked for traffic (`mark`: the API Service selects only marked leaders) and recorded; with nothing to roll, gate
    the groups no gate passed on; end with `lws` as rendered."""
    name, replicas = lws["metadata"]["name"], replicas_of(lws)
    steps: list[Step] = [RecordGate(lws, None)]
    if live.pods_change:
        for group in range(replicas - 1, -1, -1):
            steps += [
                Note(f"  rolling group {group} of {name} (partition {group}; groups below keep serving)", WAIT),
                Apply([partitioned(lws, group)], WAIT, echo=False, report=False),
                WaitGroup(lws, group),
                SmokeGroup(
                    name, group, f"  smoke of group {group} through its leader {leader_name(name, group)}", mark=mark
                ),
                RecordGate(lws, group),
            ]
    else:
        for group in live.ungated:
            heading = f"  smoke of group {group} through its leader {leader_name(name, group)} (no gate passed yet)"
            steps += [WaitGroup(lws, group), SmokeGroup(name, group, heading, mark=mark), RecordGate(lws, group)]
    steps.append(Apply([lws], WAIT, echo=False, report=False))
    if live.pods_change:
        steps.append(Note(f"  all {replicas} groups of {name} rolled, each smoke-tested before the next", WAIT))
    return steps


def blue_green(objects: list[Obj], live: LiveLws, strategy: Strategy, release: str) -> BlueGreen | None:
    """The blue-green upgrade `up --strategy blue-green` makes of a changed live group; None when there is nothing
    live to replace, or no change."""
    lws = lws_of(objects)
    if strategy.name != "blue-green" or strategy.dry_run or strategy.diff or lws is None:
        return None
    if live.live is None or not live.template_changes:
        return None
    old = lws["metadata"]["name"]
    new = other(release, old)
    new_objects = recoloured(objects, old, new)
    service = api_service_of(new_objects, new)
    preview = preview_service(service, new) if service is not None else {}
    return BlueGreen(old=old, new=new, objects=new_objects, old_objects=objects, preview=preview)


def blue_green_applied(bg: BlueGreen) -> list[Obj]:
    """What the apply stage applies: the live-colour set with its LeaderWorkerSet replaced by the new colour's and
    the preview Service added (the live group and the API Service stay as they are)."""
    lws = lws_of(bg.old_objects)
    return (
        [o for o in bg.old_objects if o is not lws] + [lws_of(bg.objects) or {}] + ([bg.preview] if bg.preview else [])
    )


def blue_green_note(bg: BlueGreen) -> Note:
    """The line that says a blue-green begins."""
    return Note(
        f"  blue-green: new group {bg.new} beside the live {bg.old}"
        + (f", with Service {preview_name(bg.new)} of its own until the switch" if bg.preview else "")
    )


def switch_over(bg: BlueGreen, group_smoke: bool) -> list[Step]:
    """Wait for the new group, smoke it by its leader, switch the API Service to it, then remove the old group."""
    new_lws = lws_of(bg.objects)
    if new_lws is None:
        return []
    steps: list[Step] = [Wait([new_lws])]
    mark = gated_service(bg.objects)
    if group_smoke:
        heading = f"  smoke of the new group {bg.new} through its leader"
        steps.append(SmokeGroup(bg.new, 0, heading, mark=mark, hint=f"the live group {bg.old} still serves"))
    elif mark:
        # No gate asked for: the new leader is marked as it is, or the switched Service would select nothing.
        steps.append(GateLeaders(bg.new, smoke=False))
    service = api_service_of(bg.objects, bg.new)
    steps.append(Switch(service, bg.new, leader_name(bg.new, 0)))
    # What else selects the group by name (the PodDisruptionBudget) follows it.
    followers = [
        obj
        for obj, was in zip(bg.objects, bg.old_objects, strict=True)
        if obj != was and obj is not service and obj.get("kind") != "LeaderWorkerSet"
    ]
    if followers:
        steps.append(Apply(followers, WAIT, echo=False, report=False))
    steps += [
        Delete(new_lws["apiVersion"], "LeaderWorkerSet", bg.old, f"  deleted the old group {bg.old}"),
        WaitGone(bg.old),
    ]
    if bg.preview:
        steps.append(Delete("v1", "Service", bg.preview["metadata"]["name"]))
    return steps


def build(objects: list[Obj], live: LiveState, strategy: Strategy, release: str) -> Plan:
    """The steps of `apply` / `up` for the rendered set `objects` (under the colour that serves) on `live`."""
    if strategy.diff:
        return Plan([Begin(APPLY), Diff(objects)], objects)
    suffix = SERVER_DRY_RUN if strategy.dry_run else ""
    bg = blue_green(objects, live.lws, strategy, release)
    steps: list[Step] = [Begin(APPLY)]
    serving_lws = lws_of(objects)
    if live.ungated_service and gated_service(objects) and serving_lws is not None and not strategy.dry_run:
        # They serve now: labelled as they are, the Service that selects the label keeps serving them.
        steps.append(GateLeaders(serving_lws["metadata"]["name"], smoke=False, stage=APPLY))
    if bg is not None:
        applying, walking = blue_green_applied(bg), switch_over(bg, strategy.group_smoke)
        steps.append(blue_green_note(bg))
    else:
        applying, walking = rolling(objects, live.lws, strategy)
        if not strategy.dry_run and live.leftovers:
            serving_lws = lws_of(objects)
            steps.append(RemoveLeftovers(live.leftovers, serving_lws["metadata"]["name"] if serving_lws else None))
    hook: list[Obj] = []
    for phase in phases(applying):
        if phase.name == "smoke" and strategy.wait and not strategy.dry_run:
            # The smoke Job tests a serving endpoint, so it goes in only once the set is ready.
            hook = phase.objects
            continue
        waited = phase.name in WAITED_PHASES and strategy.wait and not strategy.dry_run
        failure_of = bg.new if bg is not None else None
        steps.append(Apply(phase.objects, waited=waited, dry_run=strategy.dry_run, failure_of=failure_of))
    if not strategy.wait:
        if not strategy.dry_run:
            steps.append(RecordRevision(objects, APPLY))
        return Plan(steps, objects, bg, suffix)
    final = bg.objects if bg is not None else objects
    steps += [Begin(WAIT), *walking, Wait(serving(final))]
    final_lws = lws_of(final)
    if final_lws is not None and gated_service(final) and not strategy.dry_run:
        # Every leader not yet marked (a first install's, one LWS re-created) is gated, or marked as it is when no
        # gate was asked for, so the Service serves when the command ends.
        steps.append(GateLeaders(final_lws["metadata"]["name"], smoke=strategy.group_smoke))
    if hook and not strategy.in_cluster_smoke:
        # A hook for GitOps runs: `up` smoke-tests on its own, so nothing waits for it; `up --smoke in-cluster`
        # runs it afresh itself (targets/kubernetes/in_cluster.py).
        steps.append(Apply(hook, WAIT))
    steps.append(RecordRevision(final))
    return Plan(steps, final, bg, suffix)


def reachable_plans(objects: list[Obj], strategy: Strategy, release: str) -> list[Plan]:
    """Every plan a command with `strategy` may make of `objects`, whatever the cluster holds: a first install's, and
    an upgrade's (the set live, its template and every group's pods changing, a cut-short blue-green's leftovers to
    remove)."""
    plans = [build(objects, LiveState(), strategy, release)]
    lws = lws_of(objects)
    if lws is not None:
        for live in (LiveLws(live=lws), LiveLws(live=lws, template_changes=True, pods_change=True)):
            plans.append(build(objects, LiveState(lws=live, leftovers=[lws]), strategy, release))
    return plans


def reachable(objects: list[Obj], strategy: Strategy, release: str) -> list[Step]:
    """Every step of `reachable_plans`: what preflight's access review asks for (preflight/access.py), so it is the
    plan's, not a list."""
    return [step for plan in reachable_plans(objects, strategy, release) for step in plan.steps]


def switched(begun: list[Step]) -> bool:
    """Whether traffic may have moved to the new group: the Switch step began."""
    return any(isinstance(step, Switch) for step in begun)


def apply_summary(outcomes: list[StepOutcome], suffix: str = "") -> str:
    """The apply stage's summary from its steps' outcomes: the last one a step decided, else the objects counted by
    action ("2 created, 14 unchanged"; "no changes: all 16 objects unchanged")."""
    decided = [o.summary for o in outcomes if o.summary is not None]
    if decided:
        return decided[-1]
    applied = [a for o in outcomes for a in o.applied]
    if not any(o.changed for o in outcomes):
        return f"no changes: all {len(applied)} objects unchanged{suffix}"
    counts: dict[str, int] = {}
    for item in applied:
        counts[item["action"]] = counts.get(item["action"], 0) + 1
    return ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) + suffix
