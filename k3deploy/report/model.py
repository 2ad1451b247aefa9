"""The shared result of one check (preflight, smoke, up stages). Pure model, no I/O."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class Status(str, Enum):
    """Outcome of one check; SKIP is never counted as a pass."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class CheckResult(BaseModel):
    """One named check: what was measured, against what target, and how to fix a failure."""

    model_config = ConfigDict(frozen=True)

    name: str
    status: Status
    measured: Any = None
    target: Any = None
    detail: str = ""
    hint: str | None = None


def judged(
    name: str, ok: bool, measured: object, target: object, detail: str = "", hint: str = "", bad: Status = Status.FAIL
) -> CheckResult:
    """The one way a check of a measured figure against its target is built: PASS when `ok` (no hint), else `bad`
    (FAIL unless a WARN is asked for) with the `hint` that says how to fix it."""
    if ok:
        return CheckResult(name=name, status=Status.PASS, measured=measured, target=target, detail=detail)
    return CheckResult(name=name, status=bad, measured=measured, target=target, detail=detail, hint=hint)


def worst(results: list[CheckResult]) -> Status:
    """The overall status of several checks: FAIL over WARN over PASS; all SKIP gives SKIP."""
    statuses = {r.status for r in results}
    for status in (Status.FAIL, Status.WARN, Status.PASS):
        if status in statuses:
            return status
    return Status.SKIP
