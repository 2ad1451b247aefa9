"""The steps a rollout plan is made of (rollout/plan.py), and what running one did (pure data).

A step names one thing to do; the runner (targets/kubernetes/runner.py) does it, or the pipeline when it is a group's smoke, or
the target itself when it applies or waits in one go. `StepOutcome` is what one step did, from which the
stage's summary is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from k3deploy.kobject import KubeObject

Obj = KubeObject

#: The pipeline stages steps belong to; ROLLBACK and DOWN: the steps of an undo or a teardown (rollout/undo.py).
APPLY, WAIT, ROLLBACK, DOWN = "apply", "wait", "rollback", "down"
SERVER_DRY_RUN = " (server dry run)"


@dataclass(frozen=True)
class Begin:
    """A stage starts: its deadline starts counting (apply and down: the profile's rollout timeout unless --timeout
    bounds the command; wait: the wait's; rollback: a budget of its own, so a failed revision does not stay live)."""

    stage: str


@dataclass(frozen=True)
class Note:
    """A progress line."""

    text: str
    stage: str = APPLY


@dataclass(frozen=True)
class Apply:
    """Server-side apply `objects` in order. `echo`: a progress line per object; `report`: each counts in the stage's
    outcome; `waited`: wait for them once applied (the node-preflight and prefetch Jobs); `failure_of`: a failure is
    the rollout failure of that new group (blue-green: the pipeline rolls it back)."""

    objects: list[Obj]
    stage: str = APPLY
    echo: bool = True
    report: bool = True
    waited: bool = False
    dry_run: bool = False
    failure_of: str | None = None


@dataclass(frozen=True)
class Diff:
    """What a server dry-run apply of `objects` would change, changing nothing."""

    objects: list[Obj]
    stage: str = APPLY


@dataclass(frozen=True)
class Wait:
    """Wait until `objects` are ready on their current spec (watching, with a diagnosis on failure)."""

    objects: list[Obj]
    stage: str = WAIT


@dataclass(frozen=True)
class WaitGroup:
    """Wait until one group of `lws` runs its current template on every pod and they are Ready."""

    lws: Obj
    group: int
    stage: str = WAIT


@dataclass(frozen=True)
class SmokeGroup:
    """Smoke one group through its leader (run by the pipeline, after printing `heading`); raise when it fails, with
    `hint` (what still serves meanwhile). `mark`: on a pass, label the leader pod it judged so the API Service selects
    it (k3deploy/traffic_gate.py)."""

    lws: str
    group: int
    heading: str
    stage: str = WAIT
    mark: bool = False
    hint: str = "the groups not yet rolled still serve the old template"


@dataclass(frozen=True)
class GateLeaders:
    """Bring every ready leader of LeaderWorkerSet `lws` that lacks the traffic mark into traffic: with `smoke`, each
    is smoke-tested through itself and marked on a pass (run by the pipeline; a restart of a gated template is marked
    without a smoke when the profile says so); without (no gate was asked for: `apply`, `up --skip-smoke`), each is
    marked as it is."""

    lws: str
    smoke: bool
    stage: str = WAIT


@dataclass(frozen=True)
class RecordGate:
    """Record that a walk began on `lws`'s template (`group` None) or that `group` passed its gate on it."""

    lws: Obj
    group: int | None
    stage: str = WAIT


@dataclass(frozen=True)
class Switch:
    """Point the API Service at the new group and wait until its EndpointSlices list `leader` as ready."""

    service: Obj | None
    group: str
    leader: str
    stage: str = WAIT


@dataclass(frozen=True)
class Delete:
    """Delete one object (a no-op when it is gone; kept and named when it lacks the release's ownership mark, or while
    the Service `unless_selected_by` selects it); `note` is said when it was there. Its outcome names it removed
    (`Kind/name`) when it was."""

    api_version: str
    kind: str
    name: str
    note: str | None = None
    stage: str = WAIT
    #: A Service whose selector, while it picks this LeaderWorkerSet, keeps it (traffic may still go there).
    unless_selected_by: str | None = None


@dataclass(frozen=True)
class WaitGone:
    """Wait until the pods of LeaderWorkerSet `name` are gone; `best_effort`: a failed wait is no failure (the
    Namespace that holds them is going too)."""

    name: str
    stage: str = WAIT
    best_effort: bool = False


@dataclass(frozen=True)
class Restore:
    """Re-apply `objects` in the order given, taking their fields back (force); each one it changes is said and
    counted (`rollback: created ConfigMap/x`)."""

    objects: list[Obj]
    stage: str = ROLLBACK


@dataclass(frozen=True)
class Remove:
    """Delete `objects` in reverse apply order, except the kinds in `keep` and what does not carry k3deploy's mark
    (kept and named); a marked Namespace is kept too while it holds what k3deploy did not create (targets/kubernetes/history.py
    `remove`). `label` begins each line said."""

    objects: list[Obj]
    keep: frozenset[str]
    label: str = ""
    stage: str = ROLLBACK


@dataclass(frozen=True)
class Guard:
    """Stop the rest of its part of an undo when the live LeaderWorkerSet runs a template neither `applied` nor
    `previous` made (someone changed it meanwhile: re-applying `previous` would revert that); its outcome says why."""

    applied: list[Obj]
    previous: list[Obj]
    stage: str = ROLLBACK


@dataclass(frozen=True)
class RollbackAll:
    """A target that rolls back in one go: its own `rollback` to `previous` (a targets/base.py Revision)."""

    previous: Any
    stage: str = ROLLBACK


@dataclass(frozen=True)
class DownAll:
    """A target that tears down in one go: its own `down` of `objects`."""

    objects: list[Obj]
    purge: bool
    stage: str = DOWN


@dataclass(frozen=True)
class RemoveLeftovers:
    """Remove what a cut-short blue-green left beside the serving group `serving` (k3deploy's own only)."""

    objects: list[Obj]
    serving: str | None
    stage: str = APPLY


@dataclass(frozen=True)
class RecordRevision:
    """Record `objects` as the release's next revision."""

    objects: list[Obj]
    stage: str = WAIT


@dataclass(frozen=True)
class ApplyAll:
    """A target that applies in one go: its own `apply`."""

    stage: str = APPLY


@dataclass(frozen=True)
class WaitAll:
    """A target that waits in one go: its own `wait_ready`."""

    stage: str = WAIT


Step = (
    Begin
    | Note
    | Apply
    | Diff
    | Wait
    | WaitGroup
    | SmokeGroup
    | GateLeaders
    | RecordGate
    | Switch
    | Delete
    | WaitGone
    | RemoveLeftovers
    | RecordRevision
    | ApplyAll
    | WaitAll
    | Restore
    | Remove
    | Guard
    | RollbackAll
    | DownAll
)


@dataclass
class StepOutcome:
    """What one step did: each object applied ({"object", "action"}), whether any changed, a dry run's diffs, and the
    stage's summary when the step decides it (a diff, a target's own apply or wait). An undo's steps add what they
    deleted and kept (each named, the kept with why), the revision recorded, and `stop`: the rest of the undo's part
    is not to run (a Guard that found someone else's change; its summary says why)."""

    applied: list[dict[str, str]] = field(default_factory=list)
    changed: bool = False
    diffs: list[tuple[str, str]] = field(default_factory=list)
    summary: str | None = None
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    revision: int | None = None
    stop: bool = False
