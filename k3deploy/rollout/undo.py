"""A rollback and a teardown as data: (what failed or what is live, what was live before) -> steps, and the line that
says what they did (pure).

The builders here decide the steps (rollout/steps.py) of an undo from the plan that failed and the steps it began,
and those of `down` from the set read under the colour that serves; the pipeline runs them one at a time on the
target (targets/kubernetes/runner.py runs each) and makes the summary from their outcomes with `summary`. An undo is made of
parts, each said in its own words and joined with "; " (a blue-green undone after its switch: the previous revision
restored, then the new group removed); a part's Guard that finds someone else's change stops that part only.

- A first install: everything it applied is removed (what k3deploy did not create is kept and named), the weight
  cache PVC and the Namespace kept, and the revision history deleted.
- An upgrade: the previous revision is re-applied (force), what only the failed one had is removed, the previous
  revision waited for and recorded as the newest, unless the live LeaderWorkerSet runs someone else's template.
- A blue-green cut short before its switch: the new group and its preview Service go (the old group kept serving),
  and the previous revision's other objects come back; after the switch, the previous revision first, then that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from k3deploy.errors import K3DeployError
from k3deploy.lws import API_VERSION
from k3deploy.rollout.colours import api_service_of, gated_service, lws_of
from k3deploy.rollout.order import apply_order
from k3deploy.rollout.ownership import KEPT_KINDS, history_name, identity
from k3deploy.rollout.plan import BlueGreen, Plan, Strategy, reachable_plans, serving, switched
from k3deploy.rollout.steps import (
    DOWN,
    ROLLBACK,
    Apply,
    Begin,
    Delete,
    DownAll,
    GateLeaders,
    Guard,
    Obj,
    RecordRevision,
    Remove,
    Restore,
    RollbackAll,
    Step,
    StepOutcome,
    Wait,
    WaitGone,
)

#: How each kind of part is said (`summary`).
FIRST_INSTALL, NOTHING, RESTORE, ABANDON, TEARDOWN, WHOLE = (
    "first-install",
    "nothing",
    "restore",
    "abandon",
    "teardown",
    "whole",
)


@dataclass(frozen=True)
class Part:
    """Steps said together: `kind` says how (`summary`), `revision` and `group` fill in its line (the previous
    revision's number; the group that keeps serving, or `purge` for a teardown)."""

    kind: str
    steps: list[Step]
    revision: int | None = None
    group: str = ""
    purge: bool = False


@dataclass(frozen=True)
class Undo:
    """The parts of a rollback or a teardown, in order."""

    parts: list[Part] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        """Every step, in order (what preflight's access review and the tests read)."""
        return [step for part in self.parts for step in part.steps]


def whole(previous: object) -> Undo:
    """A target that rolls back in one go: its own `rollback` to `previous`."""
    return Undo([Part(WHOLE, [RollbackAll(previous)])])


def whole_down(objects: list[Obj], purge: bool) -> Undo:
    """A target that tears down in one go: its own `down`."""
    return Undo([Part(WHOLE, [DownAll(objects, purge)])])


def _first_install(objects: list[Obj], release: str) -> Part:
    """Remove what a first install applied (weights and Namespace kept) and its revision history."""
    return Part(
        FIRST_INSTALL,
        [Remove(objects, KEPT_KINDS), Delete("v1", "ConfigMap", history_name(release), stage=ROLLBACK)],
    )


def restore(previous: list[Obj] | None, number: int | None, objects: list[Obj], release: str) -> Part:
    """Bring back revision `number` (`previous`, its objects) in place of `objects`; with none, remove a first
    install; with the same objects, nothing to do."""
    if previous is None:
        return _first_install(objects, release)
    if previous == objects:
        return Part(NOTHING, [], revision=number)
    kept = {identity(obj) for obj in previous}
    added = [obj for obj in objects if identity(obj) not in kept]
    steps: list[Step] = [Guard(objects, previous), Restore(apply_order(previous))]
    if added:
        steps.append(Remove(added, KEPT_KINDS, label="rollback: "))
    steps.append(Wait(serving(previous), stage=ROLLBACK))
    restored = lws_of(previous)
    if restored is not None and gated_service(previous):
        # The revision that comes back passed its gates when it went live: its leaders LWS re-created take traffic
        # again as they are, or the rollback would leave them out of the Service (k3deploy/traffic_gate.py).
        steps.append(GateLeaders(restored["metadata"]["name"], smoke=False, stage=ROLLBACK))
    steps.append(RecordRevision(previous, stage=ROLLBACK))
    return Part(RESTORE, steps, revision=number)


def abandon(bg: BlueGreen, previous: list[Obj] | None) -> Part:
    """Remove the new group (unless the API Service still selects it) and its preview Service (the old group keeps
    serving); then, with `previous`, re-apply its objects but its LeaderWorkerSet (which kept serving) and its Jobs (a
    Job re-applied from another template runs again). The removal comes first: a restore that fails (the API server
    refusing the Service) must not leave the new group beside the old one."""
    service = api_service_of(bg.old_objects, bg.old)
    steps: list[Step] = [
        Delete(
            API_VERSION,
            "LeaderWorkerSet",
            bg.new,
            stage=ROLLBACK,
            unless_selected_by=service["metadata"]["name"] if service is not None else None,
        )
    ]
    if bg.preview:
        steps.append(Delete("v1", "Service", bg.preview["metadata"]["name"], stage=ROLLBACK))
    steps.append(WaitGone(bg.new, stage=ROLLBACK))
    if previous is not None:
        steps.append(Restore([obj for obj in previous if obj.get("kind") not in ("LeaderWorkerSet", "Job")]))
    return Part(ABANDON, steps, group=bg.old)


def _begun(parts: list[Part], stage: str) -> Undo:
    """`parts`, the first beginning with its stage's Begin (the deadline the steps run under)."""
    first, *rest = parts
    return Undo([dataclasses.replace(first, steps=[Begin(stage), *first.steps]), *rest])


def undo(
    previous: list[Obj] | None, number: int | None, plan: Plan | None, begun: list[Step], live: list[Obj], release: str
) -> Undo:
    """The rollback of a rollout that failed part way through `plan` (`begun`: its steps that started), to revision
    `number` (`previous`: its objects; None for a first install). `live`: the rendered set under the colour that
    serves, for a rollout that planned nothing."""
    bg = plan.blue_green if plan is not None else None
    if bg is not None and not switched(begun):
        return _begun([abandon(bg, previous)], ROLLBACK)
    if bg is not None:
        # Traffic had moved: the previous revision comes back first, then the new group goes.
        return _begun([restore(previous, number, bg.objects, release), abandon(bg, None)], ROLLBACK)
    undone = plan.objects if plan is not None and plan.objects else live
    return _begun([restore(previous, number, undone, release)], ROLLBACK)


def teardown(live: list[Obj], leftovers: list[Obj], purge: bool, release: str) -> Undo:
    """`down`: delete in reverse order what k3deploy created of the set `live` (and a cut-short blue-green's
    `leftovers`) and the revision history, then wait for each group's pods to go; the weight PVC and the Namespace
    stay unless `purge`."""
    steps: list[Step] = [
        Remove(live + leftovers, frozenset() if purge else KEPT_KINDS, stage=DOWN),
        Delete("v1", "ConfigMap", history_name(release), stage=DOWN),
    ]
    steps += [
        # With the Namespace deleted the pods go with it; a Namespace still terminating is no failure.
        WaitGone(obj["metadata"]["name"], stage=DOWN, best_effort=purge)
        for obj in live
        if obj["kind"] == "LeaderWorkerSet"
    ]
    return _begun([Part(TEARDOWN, steps, purge=purge)], DOWN)


def reachable(objects: list[Obj], strategy: Strategy, release: str) -> list[Step]:
    """Every step the rollback of a command with `strategy` on `objects` may run, whatever failed where: the undo of
    each reachable plan (rollout/plan.py) with every step begun, for a first install and for an upgrade from a
    revision that differs (the set without its Jobs: the failed revision's are then removed). None without a waited
    rollout (a dry run, a diff, `--no-wait`): nothing is judged, so nothing is rolled back."""
    if not strategy.gated:
        return []
    previous = [obj for obj in objects if obj["kind"] != "Job"]
    steps: list[Step] = []
    for plan in reachable_plans(objects, strategy, release):
        for before in (None, previous):
            steps += undo(before, None, plan, plan.steps, objects, release).steps
    return steps


def _kept_note(kept: list[str]) -> str:
    """The objects a removal left because k3deploy did not create them (or they hold what it did not create)."""
    return f"; kept, not k3deploy's: {', '.join(kept)}" if kept else ""


def said(part: Part, outcomes: list[StepOutcome]) -> str:
    """The line of one part, from its steps' outcomes in step order."""
    done = list(zip(part.steps, outcomes, strict=False))
    stopped = next((o.summary for o in outcomes if o.stop), None)

    def of(kind: type) -> list[StepOutcome]:
        return [o for step, o in done if isinstance(step, kind)]

    removed = [name for o in of(Remove) for name in o.removed]
    kept = [name for o in of(Remove) + of(Delete) for name in o.kept]
    restored = [a for o in of(Restore) for a in o.applied]
    if part.kind == WHOLE:
        return next((o.summary for o in reversed(outcomes) if o.summary is not None), "")
    if part.kind == NOTHING:
        return f"nothing to roll back to: revision {part.revision} is the one that failed"
    if part.kind == FIRST_INSTALL:
        return (
            f"first install removed ({len(removed)} objects deleted; weight cache PVC and namespace kept"
            f"{_kept_note(kept)})"
        )
    if part.kind == RESTORE and stopped is not None:
        return f"rollback skipped: {stopped}; re-applying revision {part.revision} would revert that change"
    if part.kind == RESTORE:
        number = next((o.revision for o in of(RecordRevision)), None)
        return (
            f"restored revision {part.revision} (now revision {number}; {len(restored) + len(removed)} objects "
            "changed) and it is ready"
        )
    if part.kind == ABANDON:
        gone = [name for o in of(Delete) for name in o.removed]
        again = f" ({len(restored)} of the previous revision's objects restored)" if restored else ""
        return (
            f"blue-green abandoned: new group removed ({', '.join(gone) or 'nothing left'}); {part.group} still "
            f"serving{again}{_kept_note(kept)}"
        )
    if part.kind == TEARDOWN:
        removed += [name for o in of(Delete) for name in o.removed]
        note = ("" if part.purge else "; weight cache PVC kept (--purge deletes it)") + _kept_note(kept)
        return f"deleted {len(removed)} objects, pods gone{note}" if removed else f"nothing to delete{note}"
    raise ValueError(f"no words for an undo part of kind {part.kind!r}")


#: How each kind of part is named when it stopped on an error (`stopped`).
_DOING = {
    FIRST_INSTALL: "removing the first install",
    RESTORE: "restoring the previous revision",
    ABANDON: "abandoning the blue-green",
    TEARDOWN: "deleting",
    WHOLE: "the rollback",
}


def stopped(part: Part, outcomes: list[StepOutcome], message: str) -> str:
    """The line of a part that an error stopped after `outcomes`: what failed, and what it deleted and kept before."""
    removed = [name for o in outcomes for name in o.removed]
    kept = [name for o in outcomes for name in o.kept]
    before = f"deleted before it: {', '.join(removed)}" if removed else "nothing deleted before it"
    return f"{_DOING.get(part.kind, part.kind)} failed: {message} ({before}{_kept_note(kept)})"


def summary(undo: Undo, outcomes: list[list[StepOutcome]], failures: Sequence[tuple[int, K3DeployError]] = ()) -> str:
    """The line a rollback or teardown ends with: each part's, joined (`outcomes`: each part's steps' outcomes).
    `failures`: (part index, error) of the parts a failed step ended (the later parts still ran): then the first
    error is raised instead, its message that same line with each failed part saying what it did before."""
    failed = dict(failures)
    line = "; ".join(
        stopped(part, done, failed[i].message) if i in failed else said(part, done)
        for i, (part, done) in enumerate(zip(undo.parts, outcomes, strict=True))
    )
    if failures:
        first = failures[0][1]
        raise K3DeployError(line, hint=first.hint, exit_code=first.exit_code)
    return line


def began_writing(begun: Sequence[Step]) -> bool:
    """Whether a rollout wrote to the cluster: an Apply (not a dry run) began. A first install that did and then
    failed, in its apply too (a user's PVC it conflicts with), is removed as any failed first install is."""
    return any(isinstance(step, Apply) and not step.dry_run for step in begun)
