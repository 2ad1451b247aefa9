"""The guard's loop (k3deploy/fault_guard/loop.py run_forever): a failed pass is said and the next one runs; the
loop ends when the command's deadline passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from k3deploy.errors import K3DeployError
from k3deploy.fault_guard.loop import Guard, PassReport, run_forever


class CountedGuard(Guard):
    """A Guard whose passes are counted instead of run (the first one fails as an unreachable API server would)."""

    def run_pass(self) -> PassReport:
        self.passes = getattr(self, "passes", 0) + 1
        if self.passes == 1:
            raise K3DeployError("cannot reach the API server")
        return PassReport()


def test_a_failed_pass_is_said_and_the_loop_goes_on_until_its_deadline() -> None:
    said: list[str] = []
    slept: list[float] = []
    g: Any = CountedGuard(
        api=None,
        profile=None,
        namespace="ns",
        evidence_dir=Path("."),
        say=said.append,  # type: ignore[arg-type]
        sleep=slept.append,
    )
    run_forever(g, 30.0, lambda: g.passes >= 3 if hasattr(g, "passes") else False)
    assert g.passes == 3
    assert said == ["pass failed: cannot reach the API server"]
    assert slept == [30.0, 30.0]
