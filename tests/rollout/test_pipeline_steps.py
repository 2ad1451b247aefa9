"""The pipeline runs a target's plan step by step and every smoke itself: a new group's gate through the target's
way to its leader (a real scripted server here), a failed gate failing the wait stage, and the rollback told how far
the plan got. The target is scripted; the cluster's own steps run on the real plane (tests/realk8s/rollout/)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from k3deploy import pipeline
from k3deploy.errors import CheckFailed, K3DeployError
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.reporter import Reporter
from k3deploy.rollout import plan as p
from k3deploy.rollout import steps as st
from k3deploy.rollout import undo as u
from k3deploy.rollout.undo import Undo
from k3deploy.smoke.reach import Reach
from k3deploy.traffic_gate import Unmarked
from tests.rollout.test_pipeline import ScriptedTarget
from tests.smoke.scripted_server import Script, scripted_server

GOOD = Script(tokens_per_chunk=[4, 3], num_speculative_tokens=4)
SMOKE = ["smoke.requests=2", "smoke.output_tokens=29", "targets.decode_tok_s=1"]


class Planned(ScriptedTarget):
    """Plans two groups' gates between its apply and its wait; each group's leader is `urls[group]`."""

    def __init__(self, urls: dict[int, str]) -> None:
        super().__init__()
        self.urls = urls
        self.undone: tuple[p.Plan | None, list[st.Step]] | None = None

    def plan(self, profile: Any, objects: Any) -> p.Plan:
        return p.Plan(
            [
                st.Begin(st.APPLY),
                st.Note("  applying"),
                st.Begin(st.WAIT),
                st.SmokeGroup("kimi", 1, "  smoke of group 1 through its leader kimi-1"),
                st.Note("  between the gates", st.WAIT),
                st.SmokeGroup("kimi", 0, "  smoke of group 0 through its leader kimi-0"),
                st.WaitAll(),
            ]
        )

    def run_step(self, profile: Any, step: st.Step, timeout_s: float, held: Any = None) -> st.StepOutcome:
        self.calls.append(type(step).__name__)
        if isinstance(step, st.WaitAll | st.RollbackAll):
            return super().run_step(profile, step, timeout_s, held)
        if isinstance(step, st.Note) and step.stage == st.APPLY:
            return st.StepOutcome([{"object": "Thing/a", "action": "created"}], changed=True)
        return st.StepOutcome()

    @contextlib.contextmanager
    def reach(self, profile: Any, group: tuple[str, int] | None = None) -> Iterator[Reach]:
        if group is None:  # the final smoke: the endpoint, as the base class reaches it
            with super().reach(profile) as whole:
                yield whole
            return
        lws, index = group
        self.calls.append(f"reach {lws} {index}")
        yield Reach(self.urls[index], "endpoint", self.urls[index])

    def undo_plan(self, profile: Any, previous: Any, plan: p.Plan | None, begun: list[st.Step], objects: Any) -> Undo:
        self.undone = (plan, list(begun))
        return super().undo_plan(profile, previous, plan, begun, objects)


def test_each_group_gate_runs_in_the_pipeline_in_plan_order_before_the_final_smoke(
    capsys: pytest.CaptureFixture[str],
) -> None:
    profile = load_profile("local-cpu", SMOKE)
    with scripted_server(GOOD) as server:
        target = Planned({0: server.url, 1: server.url})
        target.endpoint = lambda profile: server.url  # type: ignore[method-assign]
        summary = pipeline.up(profile, target, Reporter(interactive=False), preflight=False)
        served = server.counters.requests
    lines = capsys.readouterr().err.splitlines()
    assert summary.exit_code == 0, summary.error
    assert target.calls == [
        "current_revision",
        "Begin",
        "Note",
        "Begin",
        "reach kimi 1",
        "Note",
        "reach kimi 0",
        "WaitAll",
        "wait_ready",
    ]
    assert [s.name for s in summary.stages] == ["preflight", "render", "apply", "wait", "smoke"]
    assert summary.stages[2].detail == "1 created"
    wait = lines.index("==> [4/5] wait")
    gate1 = lines.index("  smoke of group 1 through its leader kimi-1")
    gate0 = lines.index("  smoke of group 0 through its leader kimi-0")
    assert wait < gate1 < gate0 < lines.index("==> [5/5] smoke")
    assert lines[gate1 + 1] == f"    ok   via the given endpoint {server.url}: {lines[gate1 + 1].split(': ', 1)[1]}"
    # Two gates and the final smoke, each a warm-up and two measured streams.
    assert served >= 3 * 3


def test_a_failed_gate_fails_the_wait_stage_stops_the_plan_and_the_rollback_knows_where() -> None:
    profile = load_profile("local-cpu", SMOKE)
    with (
        scripted_server(GOOD) as good,
        scripted_server(Script(completion_status=500)) as bad,
    ):
        target = Planned({1: good.url, 0: bad.url})
        summary = pipeline.up(profile, target, Reporter(quiet=True), preflight=False)
    assert (summary.stages[-1].name, summary.stages[-1].status) == ("wait", Status.FAIL)
    assert summary.exit_code == 1
    assert summary.error is not None and summary.error.startswith(
        f"smoke of the new group via the given endpoint {bad.url} failed"
    )
    assert summary.hint == "the groups not yet rolled still serve the old template"
    assert "WaitAll" not in target.calls and target.calls[-1] == "rollback"
    assert target.undone is not None
    plan, begun = target.undone
    assert plan is not None and begun == plan.steps[:6]


class FirstInstall(Planned):
    """A first install: its one leader is ready and takes no traffic yet, so the wait stage gates it (GateLeaders)."""

    def plan(self, profile: Any, objects: Any) -> p.Plan:
        return p.Plan([st.Begin(st.APPLY), st.Begin(st.WAIT), st.GateLeaders("kimi", smoke=True), st.WaitAll()])

    def unmarked_leaders(self, profile: Any, lws: str) -> list[Unmarked]:
        return [Unmarked(group=0, uid="uid-0", pod=f"{lws}-0", copy=False)]

    def mark_leader(self, profile: Any, group: Any, uid: str | None, why: str) -> None:
        self.calls.append(f"mark {group} {uid}")


def test_a_first_installs_failed_gate_fails_the_wait_stage_with_a_hint_of_its_own_and_marks_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No group served before a first install: its failed gate says that the leader takes no traffic, not that
    older groups still serve, and the leader is not marked."""
    profile = load_profile("local-cpu", SMOKE)
    with scripted_server(Script(completion_status=500)) as bad:
        target = FirstInstall({0: bad.url})
        summary = pipeline.up(profile, target, Reporter(interactive=False), preflight=False)
    lines = capsys.readouterr().err.splitlines()
    assert (summary.stages[-1].name, summary.stages[-1].status) == ("wait", Status.FAIL)
    assert summary.exit_code == 1
    assert "  smoke of group 0 through its leader kimi-0 (not in traffic yet)" in lines
    assert summary.error is not None and summary.error.startswith(
        f"smoke of the new group via the given endpoint {bad.url} failed"
    )
    assert summary.hint == "kimi-0 takes no traffic: the API Service selects only leaders a gate passed"
    assert not [c for c in target.calls if c.startswith("mark")]
    assert "WaitAll" not in target.calls and target.calls[-1] == "rollback"


def test_the_pipeline_runs_a_rollback_part_by_part_and_a_stopped_part_skips_only_its_own_rest() -> None:
    """The undo's steps run on the target one at a time, in order; a Guard that finds someone else's change ends its
    part, and the next part (the new group's removal) still runs."""
    profile = load_profile("local-cpu", SMOKE)
    bg = p.BlueGreen(old="kimi", new="kimi-green", objects=[], old_objects=[])
    parts = [
        u.Part(u.RESTORE, [st.Begin(st.ROLLBACK), st.Guard([], []), st.Restore([])], revision=3),
        u.Part(u.ABANDON, [st.Delete("v1", "Service", "p"), st.WaitGone("kimi-green")], group=bg.old),
    ]

    class Guarded(ScriptedTarget):
        def undo_plan(self, profile: Any, previous: Any, plan: Any, begun: Any, objects: Any) -> u.Undo:
            return u.Undo(parts)

        def run_step(self, profile: Any, step: st.Step, timeout_s: float, held: Any = None) -> st.StepOutcome:
            self.calls.append(type(step).__name__)
            if isinstance(step, st.Guard):
                return st.StepOutcome(summary="LeaderWorkerSet/kimi was changed", stop=True)
            if isinstance(step, st.Delete):
                return st.StepOutcome(removed=["Service/p"])
            if isinstance(step, st.Begin | st.Restore | st.WaitGone):
                return st.StepOutcome()
            return super().run_step(profile, step, timeout_s, held)

    target = Guarded(fail={"wait_ready": CheckFailed("not ready")})
    summary = pipeline.up(profile, target, Reporter(quiet=True), preflight=False, smoke=False)
    undone = target.calls[target.calls.index("Begin") :]
    assert undone == ["Begin", "Guard", "Delete", "WaitGone"]
    assert summary.rollback == (
        "rollback skipped: LeaderWorkerSet/kimi was changed; re-applying revision 3 would revert that change; "
        "blue-green abandoned: new group removed (Service/p); kimi still serving"
    )


def test_a_failed_rollback_part_ends_only_itself_and_the_error_says_what_every_part_did() -> None:
    """Before: a restore the API server refused (a persistent 5xx on the API Service) ended the whole rollback and
    the new group stayed beside the old one; now the next part still removes it, then the failure is reported."""
    profile = load_profile("local-cpu", SMOKE)
    parts = [
        u.Part(u.RESTORE, [st.Begin(st.ROLLBACK), st.Restore([])], revision=3),
        u.Part(u.ABANDON, [st.Delete("v1", "Service", "p"), st.WaitGone("kimi-green")], group="kimi"),
    ]

    class Refused(ScriptedTarget):
        def undo_plan(self, profile: Any, previous: Any, plan: Any, begun: Any, objects: Any) -> u.Undo:
            return u.Undo(parts)

        def run_step(self, profile: Any, step: st.Step, timeout_s: float, held: Any = None) -> st.StepOutcome:
            self.calls.append(type(step).__name__)
            if isinstance(step, st.Restore):
                raise K3DeployError("apply Service/kimi-api: 503 Service Unavailable", exit_code=3)
            if isinstance(step, st.Delete):
                return st.StepOutcome(removed=["Service/p"])
            if isinstance(step, st.Begin | st.WaitGone):
                return st.StepOutcome()
            return super().run_step(profile, step, timeout_s, held)

    target = Refused(fail={"wait_ready": CheckFailed("not ready")})
    summary = pipeline.up(profile, target, Reporter(quiet=True), preflight=False, smoke=False)
    assert target.calls[target.calls.index("Begin") :] == ["Begin", "Restore", "Delete", "WaitGone"]
    assert summary.rollback == (
        "rollback failed: restoring the previous revision failed: apply Service/kimi-api: 503 Service Unavailable "
        "(nothing deleted before it); blue-green abandoned: new group removed (Service/p); kimi still serving"
    )
