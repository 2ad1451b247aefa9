"""The steps a rollout plan is made of (rollout/plan.py), and what running one did (pure data).

A step names one thing to do; the runner (rollout/runner.py) does it, or the pipeline when it is a group's smoke, or
the target itself when it applies or waits in one go. `StepOutcome` is what one step did, from which the
stage's summary is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

#: The pipeline stages steps belong to.
APPLY, WAIT = "apply", "wait"
SERVER_DRY_RUN = " (server dry run)"


@dataclass(frozen=True)
class Begin:
    """A stage starts: its deadline starts counting (apply: the profile's rollout timeout; wait: the wait's)."""

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
    """Smoke one group through its leader (run by the pipeline, after printing `heading`); raise when it fails."""

    lws: str
    group: int
    heading: str
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
    """Delete one object (a no-op when it is gone); `note` is said when it was there."""

    api_version: str
    kind: str
    name: str
    note: str | None = None
    stage: str = WAIT


@dataclass(frozen=True)
class WaitGone:
    """Wait until the pods of LeaderWorkerSet `name` are gone."""

    name: str
    stage: str = WAIT


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
    | RecordGate
    | Switch
    | Delete
    | WaitGone
    | RemoveLeftovers
    | RecordRevision
    | ApplyAll
    | WaitAll
)


@dataclass
class StepOutcome:
    """What one step did: each object applied ({"object", "action"}), whether any changed, a dry run's diffs, and the
    stage's summary when the step decides it (a diff, a target's own apply or wait)."""

    applied: list[dict[str, str]] = field(default_factory=list)
    changed: bool = False
    diffs: list[tuple[str, str]] = field(default_factory=list)
    summary: str | None = None
