"""The gates `up` runs (k3deploy/gating.py): a passed gate marks the leader it judged, and only that pod; a failed one
marks nothing; every leader not in traffic yet is gated through itself, or marked without a smoke where the target
says its template's gate already passed. Each gate smokes a real scripted server; the target is scripted (the marks
on a real plane: tests/realk8s/test_traffic_gate.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from k3deploy import gating, pipeline
from k3deploy.errors import K3DeployError
from k3deploy.profile import load_profile
from k3deploy.reporter import Reporter
from k3deploy.rollout import plan as p
from k3deploy.rollout import steps as st
from k3deploy.smoke.reach import Reach
from k3deploy.targets.base import Rendering
from k3deploy.traffic_gate import Unmarked
from tests.rollout.test_pipeline import ScriptedTarget
from tests.smoke.scripted_server import Script, scripted_server

GOOD = Script(tokens_per_chunk=[4, 3], num_speculative_tokens=4)
SMOKE = ["smoke.requests=2", "smoke.output_tokens=29", "targets.decode_tok_s=1"]
RENDERED = Rendering(files=lambda: {}, stream=lambda: "", what="nothing")


class Gated(ScriptedTarget):
    """Leaders `kimi-<group>` at `urls[group]`; records what it marked, with the uid it was given."""

    def __init__(self, urls: dict[int, str], unmarked: list[Unmarked] | None = None) -> None:
        super().__init__()
        self.urls, self.unmarked = urls, unmarked or []
        self.marked: list[tuple[str, int, str | None, str]] = []

    @contextlib.contextmanager
    def reach(self, profile: Any, group: tuple[str, int] | None = None) -> Iterator[Reach]:
        assert group is not None, "a gate never reaches the whole deployment"
        self.calls.append(f"reach {group[0]} {group[1]}")
        yield Reach(self.urls[group[1]], "endpoint", self.urls[group[1]])

    def unmarked_leaders(self, profile: Any, lws: str) -> list[Unmarked]:
        return list(self.unmarked)

    def leader_uid(self, profile: Any, group: tuple[str, int]) -> str | None:
        return f"uid-{group[1]}-before"

    def mark_leader(self, profile: Any, group: tuple[str, int], uid: str | None, why: str) -> None:
        self.marked.append((group[0], group[1], uid, why))


def test_a_passed_gate_marks_the_leader_it_judged_by_the_uid_read_before_the_smoke() -> None:
    profile = load_profile("local-cpu", SMOKE)
    with scripted_server(GOOD) as server:
        target = Gated({1: server.url})
        step = st.SmokeGroup("kimi", 1, "  smoke of group 1", mark=True)
        gating.group_smoke(profile, target, RENDERED, step, Reporter(quiet=True), "client")
        unmarked = st.SmokeGroup("kimi", 1, "  smoke of group 1")
        gating.group_smoke(profile, target, RENDERED, unmarked, Reporter(quiet=True), "client")
    assert target.marked == [("kimi", 1, "uid-1-before", "its gate passed")]


def test_a_failed_gate_marks_nothing() -> None:
    profile = load_profile("local-cpu", SMOKE)
    with scripted_server(Script(completion_status=500)) as bad:
        target = Gated({0: bad.url})
        with pytest.raises(K3DeployError, match="smoke of the new group via the given endpoint"):
            step = st.SmokeGroup("kimi", 0, "  smoke of group 0", mark=True)
            gating.group_smoke(profile, target, RENDERED, step, Reporter(quiet=True), "client")
    assert target.marked == []


def test_unmarked_leaders_are_gated_each_through_itself_and_a_restart_of_a_gated_template_is_copied(
    capsys: pytest.CaptureFixture[str],
) -> None:
    profile = load_profile("local-cpu", SMOKE)
    with scripted_server(GOOD) as zero, scripted_server(GOOD) as two:
        unmarked = [Unmarked(0, "u0", "kimi-0", copy=False), Unmarked(1, "u1", "kimi-1", copy=True)]
        unmarked.append(Unmarked(2, "u2", "kimi-2", copy=False))
        target = Gated({0: zero.url, 2: two.url}, unmarked)
        gating.gate_leaders(profile, target, RENDERED, "kimi", Reporter(interactive=False), "client")
        served = (zero.counters.requests, two.counters.requests)
    lines = capsys.readouterr().err.splitlines()
    assert target.calls == ["reach kimi 0", "reach kimi 2"]  # group 1 was not smoked
    assert target.marked == [
        ("kimi", 0, "u0", "its gate passed"),
        ("kimi", 1, "u1", "a restart of a template its gate passed on"),
        ("kimi", 2, "u2", "its gate passed"),
    ]
    assert "  smoke of group 0 through its leader kimi-0 (not in traffic yet)" in lines
    assert all(n >= 3 for n in served)  # a warm-up and two measured streams each


def test_the_pipeline_gates_leaders_itself_and_leaves_the_gateless_marking_to_the_target() -> None:
    profile = load_profile("local-cpu", SMOKE)

    class Planned(Gated):
        def plan(self, profile: Any, objects: Any) -> p.Plan:
            return p.Plan([st.Begin(st.WAIT), st.GateLeaders("kimi", smoke=False), st.GateLeaders("kimi", smoke=True)])

        def run_step(self, profile: Any, step: st.Step, timeout_s: float, held: Any = None) -> st.StepOutcome:
            self.calls.append(f"{type(step).__name__} {getattr(step, 'smoke', '')}".strip())
            return st.StepOutcome()

    with scripted_server(GOOD) as server:
        target = Planned({0: server.url}, [Unmarked(0, "u0", "kimi-0", copy=False)])
        summary = pipeline.up(profile, target, Reporter(quiet=True), preflight=False, smoke=False)
    assert summary.exit_code == 0, summary.error
    assert target.calls == ["current_revision", "Begin", "GateLeaders False", "reach kimi 0"]
    assert target.marked == [("kimi", 0, "u0", "its gate passed")]
