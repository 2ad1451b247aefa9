"""The smoke report inside a smoke Job's log: the JSON document `k3deploy smoke -o json` prints last.

The Job's container log holds both streams in the order written: the waiting notices and the verdict table
(stderr), then the report (stdout, indented JSON that starts on a line of its own). The report is the last JSON object
of kind `k3deploy.smoke` that decodes from the start of a line; anything after it is ignored.

`verdict` judges a finished Job (`JobRun`, what the target read of it: targets/kubernetes/in_cluster.py) as the pipeline judges
any smoke: its report decides; a Job that ends without one, or fails while its report passed, is a SmokeUnreachable
(exit 3), and the install is kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import ValidationError

from k3deploy.errors import SmokeUnreachable
from k3deploy.report.smoke import SmokeReport
from k3deploy.smoke.reach import Reach

KIND = "k3deploy.smoke"


def report_from_log(text: str) -> SmokeReport | None:
    """The last smoke report in `text`, None when there is none (or it does not validate)."""
    decoder = json.JSONDecoder()
    starts = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            starts.append(offset + len(line) - len(line.lstrip()))
        offset += len(line)
    for start in reversed(starts):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("kind") != KIND:
            continue
        try:
            return SmokeReport.model_validate(obj)
        except ValidationError:
            continue
    return None


@dataclass(frozen=True)
class JobRun:
    """A smoke Job run to its end, as the cluster told it: which Job, how it ended, its container's log."""

    #: `namespace/Job/name`, as errors name objects.
    key: str
    #: `job/namespace/name`: where the smoke ran, as a Reach says it.
    target: str
    log: str
    #: "completed", or "failed (reason: message)".
    outcome: str
    failed: bool
    #: How to look at the Job and go on.
    hint: str


def verdict(run: JobRun) -> tuple[SmokeReport, Reach]:
    """The report `run`'s log ends with and where it reached the server; SmokeUnreachable when there is no verdict
    (no report, or a failed Job whose report passed)."""
    report = report_from_log(run.log)
    if report is None:
        raise SmokeUnreachable(
            f"the smoke Job {run.key} {run.outcome} without a smoke report in its log", hint=run.hint
        )
    failed_check = any(c.status.value == "fail" for c in report.checks)
    if run.failed and report.blocked_by is None and not failed_check:
        raise SmokeUnreachable(f"the smoke Job {run.key} {run.outcome} although its report passed", hint=run.hint)
    return report, Reach(report.endpoint, "in-cluster", run.target, retry_hint=run.hint)
