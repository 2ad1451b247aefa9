"""Bench orchestration: liveness, one warm-up, then per concurrency level and category: scrape /metrics, stream
the category's prompts at that concurrency, scrape again. Uses smoke's client, request body and record code.

Categories run one after another, each between its own two scrapes, so the server's spec-decode counters are
attributed to the category that moved them (a server scrape window holds only that category's traffic).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from k3deploy.bench import figures
from k3deploy.bench.datasets import BenchPrompt, Dataset, prompt_set_digest
from k3deploy.errors import EnvironmentProblem
from k3deploy.profile import Profile
from k3deploy.redact import redact_url
from k3deploy.report.bench import BenchReport, BenchRequest, BenchSettings, CellFigures, ServerDelta
from k3deploy.smoke import metrics
from k3deploy.smoke.client import EndpointError, SmokeClient, run_fast
from k3deploy.smoke.record import RequestSpec, build_record
from k3deploy.smoke.runner import normalize_endpoint, request_body

#: (requests done, requests in all, decode tok/s of the request that just finished)
Progress = Callable[[int, int, float | None], None]


@dataclass
class BenchPlan:
    """What to send: the prompts per category, the concurrency levels, the output length."""

    dataset: Dataset
    prompts: dict[str, list[BenchPrompt]]
    concurrency: list[int]
    output_tokens: int
    per_category: int | None = None
    label: str = "run"

    def batch(self, category: str, level: int) -> list[BenchPrompt]:
        """The category's prompts, cycled up to at least `level` requests so every slot is busy."""
        pool = self.prompts[category]
        return [pool[i % len(pool)] for i in range(max(len(pool), level))]

    def total_requests(self) -> int:
        """Measured requests of the whole run (the warm-up not included)."""
        return sum(len(self.batch(c, level)) for level in self.concurrency for c in self.prompts)


@dataclass
class BenchOptions:
    """How to reach the endpoint and whom to tell about progress."""

    api_key: str | None = None
    transport: httpx.AsyncBaseTransport | None = None
    progress: Progress | None = None
    note: Callable[[str], None] | None = None


@dataclass
class _Cells:
    requests: list[BenchRequest] = field(default_factory=list)
    cells: list[CellFigures] = field(default_factory=list)
    overall: list[CellFigures] = field(default_factory=list)


async def _scrape(client: SmokeClient) -> tuple[metrics.MetricsSnapshot | None, str | None]:
    try:
        text, started, finished = await client.metrics()
        return metrics.parse_metrics(text, started, finished), None
    except (EndpointError, metrics.MetricsFormatError) as exc:
        return None, f"/metrics unavailable: {exc}"


async def _liveness(client: SmokeClient, served: str) -> None:
    try:
        status = await client.health()
        models = await client.models() if status == 200 else []
    except EndpointError as exc:
        raise EnvironmentProblem(
            f"{client.base_url} cannot be benchmarked: {exc.message}",
            hint="check --endpoint (and --api-key-env); `k3deploy smoke` diagnoses further",
        ) from None
    if status != 200:
        raise EnvironmentProblem(f"{client.base_url}/health answered {status}", hint="wait until the server is ready")
    if served not in models:
        raise EnvironmentProblem(
            f"{client.base_url} serves {', '.join(models) or 'no model'}, not {served}",
            hint=f"pick the matching profile, or --set model.served_name={models[0] if models else 'NAME'}",
        )


async def run_bench_async(
    profile: Profile, endpoint: str, plan: BenchPlan, options: BenchOptions | None = None
) -> BenchReport:
    """Run the plan against `endpoint` and return the report; an endpoint that cannot be reached raises (exit 3)."""
    options = options or BenchOptions()
    say = options.note or (lambda _msg: None)
    base = normalize_endpoint(endpoint)
    started, t0 = datetime.now(UTC), time.perf_counter()
    total, done = plan.total_requests(), 0
    out = _Cells()
    async with SmokeClient(
        base,
        api_key=options.api_key,
        request_timeout_s=profile.smoke.request_timeout_s,
        max_connections=max(plan.concurrency),
        transport=options.transport,
        clock=lambda: time.perf_counter() - t0,
    ) as client:
        await _liveness(client, profile.model.served_name)

        async def one(prompt: BenchPrompt, level: int, index: int) -> BenchRequest:
            path, body = request_body(profile, prompt.text, plan.output_tokens, ignore_eos=True)
            spec = RequestSpec(index, "measured", prompt.id, plan.output_tokens, None, level)
            return figures.compact(build_record(await client.stream(path, body), spec), prompt.category)

        first = next(iter(plan.prompts.values()))[0]
        warm = await one(first, 1, 0)
        say(f"warm-up: {'ok' if warm.ok else warm.error}")
        for level in sorted(set(plan.concurrency)):
            level_cells: list[CellFigures] = []
            level_requests: list[BenchRequest] = []
            for category in plan.prompts:
                gate = asyncio.Semaphore(level)

                async def gated(
                    i: int, prompt: BenchPrompt, level: int = level, gate: asyncio.Semaphore = gate
                ) -> BenchRequest:
                    nonlocal done
                    async with gate:
                        record = await one(prompt, level, i)
                    done += 1
                    if options.progress is not None:
                        options.progress(done, total, figures.decode_figure(record))
                    return record

                before, error = await _scrape(client)
                records = list(await asyncio.gather(*(gated(i, p) for i, p in enumerate(plan.batch(category, level)))))
                after, error_after = await _scrape(client) if before is not None else (None, error)
                server = (
                    figures.server_delta(metrics.diff(before, after))
                    if before is not None and after is not None
                    else ServerDelta(available=False, error=error or error_after)
                )
                cell = figures.cell_figures(category, level, records, server)
                level_cells.append(cell)
                level_requests += records
                say(
                    f"{category} @ {level}: median decode {cell.decode_tok_s.median or 0:.1f} tok/s, "
                    f"{cell.failed} failed"
                )
            out.cells += level_cells
            out.requests += level_requests
            out.overall.append(figures.overall_figures(level, level_requests, level_cells))

    speculative = profile.speculative.config() if profile.speculative is not None else None
    report = BenchReport(
        label=plan.label,
        profile=profile.name,
        endpoint=redact_url(base),
        model=profile.model.served_name,
        speculative=speculative,
        settings=BenchSettings(
            dataset=plan.dataset.name,
            subset=plan.dataset.subset,
            categories=list(plan.prompts),
            prompt_set_sha256=prompt_set_digest([p for ps in plan.prompts.values() for p in ps]),
            prompts_per_category=plan.per_category,
            output_tokens=plan.output_tokens,
            temperature=profile.smoke.temperature,
            api=profile.smoke.api,
            concurrency=sorted(set(plan.concurrency)),
        ),
        references=published_references(profile),
        started_at=started,
        cells=out.cells,
        overall=out.overall,
        requests=out.requests,
        warnings=figures.token_mismatches(out.cells) + _failures(out.requests),
    )
    report.finished_at = datetime.now(UTC)
    report.duration_s = time.perf_counter() - t0
    return report


def published_references(profile: Profile) -> dict[str, float | None]:
    """The published figures a profile's targets name: the baseline / with-speculation pair and the peak.

    targets.decode_tok_s is the published with-speculation figure only beside a published baseline; alone (as in
    local-cpu) it is a floor the profile enforces, not a publication, and is left out.
    """
    targets = profile.targets
    paired = targets.baseline_decode_tok_s is not None
    return {
        "baseline_decode_tok_s": targets.baseline_decode_tok_s,
        "decode_tok_s": targets.decode_tok_s if paired else None,
        "peak_decode_tok_s": targets.peak_decode_tok_s,
    }


def _failures(requests: list[BenchRequest]) -> list[str]:
    failed = [r for r in requests if not r.ok]
    if not failed:
        return []
    return [
        f"{len(failed)} of {len(requests)} request(s) failed, first: {failed[0].category}/{failed[0].prompt_id}: {failed[0].error}"
    ]


def run_bench(profile: Profile, endpoint: str, plan: BenchPlan, options: BenchOptions | None = None) -> BenchReport:
    """Synchronous entry point for the CLI and `--ab` (on uvloop where installed: less client CPU per token)."""
    return run_fast(run_bench_async(profile, endpoint, plan, options))
