"""The figures `up` ends with, to tell whether the deployment got there. Pure.

Every number is read from the SmokeReport (its checks, its metrics delta, the targets it judged against),
never recomputed, so `up` and `smoke` cannot disagree. A rehearsal model's figures carry a label: they
prove the pipeline, not Kimi K3's speed.
"""

from __future__ import annotations

from typing import Any

from k3deploy.report.model import Status
from k3deploy.report.smoke import SmokeReport
from k3deploy.smoke.verdict import DECODE_TARGET, SPECULATIVE

#: Said wherever a rehearsal model's figures are shown.
REHEARSAL_LABEL = "REHEARSAL MODEL (random weights), not Kimi K3: these figures prove the pipeline, not Kimi K3's speed"


def headline(report: SmokeReport, *, model: str, rehearsal: bool) -> dict[str, Any]:
    """The figures as JSON-able values; None where smoke measured nothing (or judged nothing)."""
    decode = report.check(DECODE_TARGET)
    speculative = report.check(SPECULATIVE)
    spec = report.metrics.spec_decode if report.metrics is not None else None
    targets = report.targets
    return {
        "model": model,
        "rehearsal": rehearsal,
        "label": REHEARSAL_LABEL if rehearsal else None,
        "decode_tok_s": {
            "median": decode.measured if decode is not None else None,
            "target": targets.get("decode_tok_s"),
            # The band below the target smoke passes (smoke.decode_tolerance), only where the profile gives one.
            **({"tolerance": band} if (band := report.settings.get("decode_tolerance")) else {}),
            "published_peak": targets.get("peak_decode_tok_s"),
            "published_baseline": targets.get("baseline_decode_tok_s"),
            "status": decode.status.value if decode is not None else None,
        },
        "acceptance_length": {
            "mean": spec.mean_acceptance_length if spec is not None else None,
            "minimum": targets.get("min_acceptance_length"),
            "status": speculative.status.value if speculative is not None else None,
        },
        "acceptance_rate": spec.acceptance_rate if spec is not None else None,
        "drafts": spec.drafts if spec is not None else None,
        # The other checks that failed (correctness, health...): a failed smoke is never summed up as "targets met".
        "failed_checks": [
            c.name for c in report.checks if c.status is Status.FAIL and c.name not in (DECODE_TARGET, SPECULATIVE)
        ],
    }


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _verdict(figures: dict[str, Any]) -> str:
    judged = {
        "decode tok/s": figures["decode_tok_s"]["status"],
        "acceptance length": figures["acceptance_length"]["status"],
    }
    failed = [name for name, status in judged.items() if status == Status.FAIL.value]
    others = list(figures.get("failed_checks") or [])
    if failed:
        return "targets NOT met: " + ", ".join(failed) + (f"; smoke also FAILED: {', '.join(others)}" if others else "")
    met = [name for name, status in judged.items() if status == Status.PASS.value]
    if others:
        return f"smoke FAILED: {', '.join(others)}" + (f" ({' and '.join(met)} passed)" if met else "")
    if met:
        return "targets met"
    return "nothing judged against a target"


def headline_lines(figures: dict[str, Any]) -> list[str]:
    """The figures as the lines closing `up`'s summary."""
    decode, length = figures["decode_tok_s"], figures["acceptance_length"]
    title = f"  smoke figures ({figures['model']})"
    lines = [title + (f" - {figures['label']}:" if figures["rehearsal"] else ":")]
    band = f" less {decode['tolerance']:.0%}" if decode.get("tolerance") else ""
    against = [f"target {decode['target']:g}{band}" if decode["target"] is not None else "no target"]
    if decode["published_peak"] is not None:
        against.append(f"{decode['published_peak']:g} tok/s published peak")
    if decode["published_baseline"] is not None:
        against.append(f"{decode['published_baseline']:g} tok/s published without speculation")
    lines.append(
        f"    decode tok/s       {_num(decode['median'], '.1f')} median at bs=1 vs {', '.join(against)}"
        f" [{decode['status'] or '-'}]"
    )
    minimum = f"minimum {length['minimum']:g}" if length["minimum"] is not None else "no minimum"
    lines.append(f"    acceptance length  {_num(length['mean'], '.2f')} mean vs {minimum} [{length['status'] or '-'}]")
    lines.append(
        f"    acceptance rate    {_num(figures['acceptance_rate'], '.3f')} over {_num(figures['drafts'], ',.0f')} drafts"
    )
    lines.append(f"    result             {_verdict(figures)}")
    return lines
