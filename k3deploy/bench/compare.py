"""`bench compare`: speedups between runs, per category, tier and overall, beside the published references. Pure.

Runs compare only like for like (SPEED-Bench's and vLLM's own advice): same dataset and subset, same prompt set
(by digest), same output length, same temperature. Anything else is refused with what differs.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from k3deploy.report.bench import FORMULAS, BenchReport, CellFigures

#: Settings that must be equal, and how to name them to a user.
LIKE_FOR_LIKE = (
    ("dataset", "dataset"),
    ("prompt_set_sha256", "prompt set"),
    ("output_tokens", "output length"),
    ("temperature", "temperature"),
)


class SpeedupRow(BaseModel):
    """One cell across runs: each run's median decode tok/s and its speedup over the first run."""

    category: str
    concurrency: int
    decode_tok_s: list[float | None]
    speedup: list[float | None]
    aggregate_tok_s: list[float | None]
    mean_acceptance_length: list[float | None]


class References(BaseModel):
    """The published figures the profile names (vLLM blog / Inferact), and the speedup they imply."""

    baseline_decode_tok_s: float | None = None
    decode_tok_s: float | None = None
    peak_decode_tok_s: float | None = None
    speedup: float | None = None


class Comparison(BaseModel):
    """What `bench compare` prints and writes with -o json."""

    labels: list[str]
    files: list[str]
    rows: list[SpeedupRow]
    references: References
    formula: str = FORMULAS["speedup"]


def differences(reports: Sequence[BenchReport], names: Sequence[str]) -> list[str]:
    """One line per setting that differs from the first run's, naming both values."""
    out = []
    first = reports[0].settings
    for report, name in zip(reports[1:], names[1:], strict=False):
        for key, what in LIKE_FOR_LIKE:
            a, b = getattr(first, key), getattr(report.settings, key)
            if a != b:
                shown = (a[:12], b[:12]) if key == "prompt_set_sha256" else (a, b)
                out.append(f"{what} differs: {names[0]} has {shown[0]}, {name} has {shown[1]}")
    return out


def references(report: BenchReport) -> References:
    """The published figures stored in a report (from its profile's targets)."""
    refs = report.references
    base, spec = refs.get("baseline_decode_tok_s"), refs.get("decode_tok_s")
    return References(
        baseline_decode_tok_s=base,
        decode_tok_s=spec,
        peak_decode_tok_s=refs.get("peak_decode_tok_s"),
        speedup=spec / base if base and spec else None,
    )


def _acceptance(cell: CellFigures | None) -> float | None:
    if cell is None or cell.server is None or cell.server.spec_decode is None:
        return None
    return cell.server.spec_decode.mean_acceptance_length


def _row(category: str, level: int, reports: Sequence[BenchReport]) -> SpeedupRow:
    cells = [r.cell(category, level) for r in reports]
    rates = [c.decode_tok_s.median if c is not None else None for c in cells]
    base = rates[0]
    return SpeedupRow(
        category=category,
        concurrency=level,
        decode_tok_s=rates,
        speedup=[r / base if r is not None and base else None for r in rates],
        aggregate_tok_s=[c.aggregate_tok_s if c is not None else None for c in cells],
        mean_acceptance_length=[_acceptance(c) for c in cells],
    )


def compare(reports: Sequence[BenchReport], files: Sequence[str]) -> Comparison:
    """Speedup of every run over the first, per cell present in the first run, then overall per concurrency."""
    rows = [_row(c.category, c.concurrency, reports) for c in reports[0].cells]
    rows += [_row(c.category, c.concurrency, reports) for c in reports[0].overall]
    return Comparison(
        labels=[r.label for r in reports], files=list(files), rows=rows, references=references(reports[0])
    )


def best_per_concurrency(reports: Sequence[BenchReport]) -> dict[int, tuple[str, float]]:
    """Per concurrency level, the run with the highest overall median decode tok/s (the best draft length in a sweep)."""
    best: dict[int, tuple[str, float]] = {}
    for report in reports:
        for cell in report.overall:
            rate = cell.decode_tok_s.median
            if rate is not None and (cell.concurrency not in best or rate > best[cell.concurrency][1]):
                best[cell.concurrency] = (report.label, rate)
    return dict(sorted(best.items()))


def headline(reports: Sequence[BenchReport]) -> list[str]:
    """The lines `bench --ab` / `--sweep` end with: overall speedup over the first run, and the best run per level."""
    out = []
    for cell in reports[0].overall:
        base = cell.decode_tok_s.median
        for report in reports[1:]:
            other = report.cell("overall", cell.concurrency)
            rate = other.decode_tok_s.median if other is not None else None
            if base and rate:
                out.append(
                    f"speedup {report.label} over {reports[0].label} at concurrency {cell.concurrency}: "
                    f"{rate / base:.2f}x ({base:,.1f} -> {rate:,.1f} median decode tok/s)"
                )
    if len(reports) > 2:
        out += [
            f"best at concurrency {level}: {label} ({rate:,.1f} tok/s)"
            for level, (label, rate) in best_per_concurrency(reports).items()
        ]
    return out
