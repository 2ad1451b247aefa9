"""The last canary run as `status` and `watch` show it: when, decode (and output) tok/s, acceptance per category, and
a verdict judged as the canary's alerts judge. Pure.

`status` reads it from the report the canary keeps in its ConfigMap (`from_report`); `watch --prometheus` from the
canary's series in Prometheus (`from_series`). The verdict here is one run's: the drift alert waits for a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from k3deploy.observe import canary_series as series
from k3deploy.observe.canary_rules import drift_bound, floors
from k3deploy.profile.model import Profile
from k3deploy.report.bench import BenchReport


@dataclass(frozen=True)
class CanaryRun:
    """One canary run's figures and its verdict (`ok`, or what is wrong)."""

    finished_at: datetime | None
    decode_tok_s: float | None
    output_tok_s: float | None = None
    acceptance: dict[str, float] = field(default_factory=dict)
    failed: int = 0
    verdict: str = "ok"

    def as_dict(self) -> dict[str, object]:
        """JSON-able (`status -o json`, `watch -o json`)."""
        out: dict[str, object] = asdict(self)
        out["finished_at"] = self.finished_at.isoformat() if self.finished_at else None
        out["line"] = line(self)
        return out


def judge(profile: Profile, decode: float | None, acceptance: dict[str, float], failed: int) -> str:
    """`ok`, else every problem of the run: failed requests, decode under the drift bound, a category under its floor."""
    problems = []
    if failed:
        problems.append(f"{failed} request(s) failed")
    bound = drift_bound(profile)
    if decode is None:
        problems.append("no decode figure")
    elif bound is not None and decode < bound:
        problems.append(f"decode {decode:,.1f} < {bound:g} tok/s")
    for category, floor in floors(profile).items():
        length = acceptance.get(category)
        if length is not None and length < floor:
            problems.append(f"{category} acceptance {length:.2f} < {floor:g}")
    return "; ".join(problems) or "ok"


def from_report(report: BenchReport, profile: Profile) -> CanaryRun:
    """The run a kept report describes (its first load point, as the pushed series)."""
    samples = series.samples(report, 0.0)
    single = {s.name: s.value for s in samples if not s.labels}
    acceptance = {dict(s.labels)["category"]: s.value for s in samples if s.name == series.ACCEPTANCE}
    decode, failed = single.get(series.DECODE), int(single.get(series.FAILED, 0))
    verdict = judge(profile, decode, acceptance, failed)
    if verdict == "ok" and report.warnings:
        verdict = f"warning: {report.warnings[0]}"
    finished = report.finished_at or report.started_at
    return CanaryRun(finished, decode, single.get(series.OUTPUT), acceptance, failed, verdict)


def queries(profile: Profile) -> dict[str, str]:
    """The instant queries `from_series` reads: the release's canary series (group by group)."""
    sel = f'{{job="{series.JOB}",release="{profile.name}"}}'
    names = {
        "decode": series.DECODE,
        "output": series.OUTPUT,
        "failed": series.FAILED,
        "acceptance": series.ACCEPTANCE,
        "last_success": series.LAST_SUCCESS,
        "pushed": "push_time_seconds",
    }
    return {key: f"max by (category) ({name}{sel})" for key, name in names.items()}


def from_series(profile: Profile, answers: Mapping[str, Sequence[tuple[Mapping[str, str], float]]]) -> CanaryRun | None:
    """The last run as Prometheus holds it (answers to `queries`); None when it holds none."""

    def one(key: str) -> float | None:
        values = [v for labels, v in answers.get(key, []) if not labels.get("category")]
        return values[0] if values else None

    pushed = one("pushed") or one("last_success")
    if pushed is None:
        return None
    acceptance = {labels["category"]: v for labels, v in answers.get("acceptance", []) if labels.get("category")}
    decode, failed = one("decode"), int(one("failed") or 0)
    return CanaryRun(
        datetime.fromtimestamp(pushed, UTC),
        decode,
        one("output"),
        acceptance,
        failed,
        judge(profile, decode, acceptance, failed),
    )


def line(run: CanaryRun | None) -> str:
    """`last canary: <when> · decode 352.1 tok/s (output 301.2) · acceptance low_entropy 4.71 · ok`."""
    if run is None:
        return "last canary: none recorded"
    when = f"{run.finished_at:%Y-%m-%d %H:%M:%S}Z" if run.finished_at else "-"
    decode = "-" if run.decode_tok_s is None else f"{run.decode_tok_s:,.1f}"
    output = "" if run.output_tok_s is None else f" (output {run.output_tok_s:,.1f}, TTFT included)"
    accepted = ", ".join(f"{c} {v:.2f}" for c, v in sorted(run.acceptance.items())) or "-"
    return f"last canary: {when} · decode {decode} tok/s{output} · acceptance {accepted} · {run.verdict}"
