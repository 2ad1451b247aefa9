"""The canary's series: what one `k3deploy bench` run becomes in Prometheus, pushed to a Pushgateway. Pure.

One run is one push to the group `job=k3deploy-canary` plus the grouping key (release, serving group, image digest,
draft revision): a new image or draft revision starts new series, so a run is only ever compared with runs of the
same build. Figures are the overall cell's at the run's first load point (bs=1), and per category its acceptance
length from the server's counters. `last_success_timestamp_seconds` is pushed only by a run with no failed request
and no warning: a failed run leaves the previous success in place (the push adds, never deletes), and so the
staleness alert sees it age.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from k3deploy.profile.model import Profile

if TYPE_CHECKING:  # `render` loads these names (the rules, the dashboard), never the report models
    from k3deploy.report.bench import BenchReport, CellFigures

#: The Pushgateway job of every canary push.
JOB = "k3deploy-canary"
PREFIX = "k3deploy_canary_"
DECODE = PREFIX + "decode_tok_s"
OUTPUT = PREFIX + "output_tok_s"
TTFT = PREFIX + "ttft_seconds"
ACCEPTANCE = PREFIX + "acceptance_length"
LAST_SUCCESS = PREFIX + "last_success_timestamp_seconds"
FAILED = PREFIX + "requests_failed"
REQUESTS = PREFIX + "requests"
#: Every series name, with its help text.
HELP = {
    DECODE: "Median per-request decode tok/s of the canary run, TTFT excluded (what targets.decode_tok_s judges).",
    OUTPUT: "Output tok/s of the canary run, TTFT included (vllm bench serve's output throughput at concurrency 1).",
    TTFT: "Median time to first token of the canary run, seconds.",
    ACCEPTANCE: "Mean acceptance length per category in the canary run (1 + accepted / drafts).",
    LAST_SUCCESS: "Unix time the last canary run with no failed request and no warning finished.",
    FAILED: "Requests that failed in the last canary run.",
    REQUESTS: "Requests sent in the last canary run.",
}
#: The grouping key's label names, in push order.
GROUPING_LABELS = ("release", "group", "image_digest", "draft_revision")
_DIGEST = re.compile(r"@(sha256:[0-9a-f]{64})$")


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of one series; `labels` are beyond the grouping key."""

    name: str
    value: float
    labels: tuple[tuple[str, str], ...] = ()


def image_digest(image: str) -> str:
    """The digest of an image reference pinned by digest (`k3deploy pin`), else `unpinned`."""
    found = _DIGEST.search(image)
    return found.group(1) if found else "unpinned"


def grouping_key(profile: Profile, group: int) -> dict[str, str]:
    """release, serving group, the vLLM image's digest and the draft's revision (`none` without a draft)."""
    spec = profile.speculative
    draft = "none" if spec is None else (spec.revision or "unpinned")
    return {
        "release": profile.name,
        "group": str(group),
        "image_digest": image_digest(profile.vllm.image),
        "draft_revision": draft,
    }


def _acceptance(cell: CellFigures) -> float | None:
    server = cell.server
    if server is None or not server.available or server.spec_decode is None or server.spec_decode.drafts <= 0:
        return None
    return server.spec_decode.mean_acceptance_length


def succeeded(report: BenchReport) -> bool:
    """No request failed and nothing was warned about (token counts agree, spec-decode figures are possible)."""
    return not report.warnings and all(r.ok for r in report.requests)


def samples(report: BenchReport, finished_at: float) -> list[Sample]:
    """The run's series; `finished_at` (Unix seconds) is the success stamp when the run succeeded."""
    point = report.first_point()
    overall = report.cell("overall", point.concurrency, point.request_rate)
    out: list[Sample] = []
    if overall is not None:
        out.append(Sample(REQUESTS, float(overall.requests)))
        out.append(Sample(FAILED, float(overall.failed)))
        if overall.decode_tok_s.median is not None:
            out.append(Sample(DECODE, overall.decode_tok_s.median))
        if overall.output_tok_s is not None:
            out.append(Sample(OUTPUT, overall.output_tok_s))
        if overall.ttft_ms.median is not None:
            out.append(Sample(TTFT, overall.ttft_ms.median / 1000.0))
    for cell in report.cells:
        if cell.concurrency == point.concurrency and cell.request_rate == point.request_rate:
            length = _acceptance(cell)
            if length is not None:
                out.append(Sample(ACCEPTANCE, length, (("category", cell.category),)))
    if succeeded(report) and overall is not None and overall.decode_tok_s.median is not None:
        out.append(Sample(LAST_SUCCESS, finished_at))
    return out
