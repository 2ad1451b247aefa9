"""Bench orchestration: liveness, one warm-up, then per load point, category and repeat one measurement window
(k3deploy.measure.window, smoke's too): scrape /metrics, offer the category's prompts under the load model, scrape
again. Uses smoke's client, request body and record code; the measured runs become a report in `assemble`.

Categories run one after another, each between its own two scrapes, so the server's spec-decode counters are
attributed to the category that moved them (a server scrape window holds only that category's traffic).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from k3deploy import __version__
from k3deploy.bench import figures, latency, load
from k3deploy.bench.datasets import BenchPrompt, Dataset, prompt_set_digest
from k3deploy.errors import EndpointError, EnvironmentProblem
from k3deploy.measure import metrics
from k3deploy.measure.client import SmokeClient, run_fast
from k3deploy.measure.record import RequestSpec, build_record
from k3deploy.measure.request import normalize_endpoint, request_body
from k3deploy.measure.window import measure_window
from k3deploy.profile import Profile
from k3deploy.redact import redact_url
from k3deploy.report.bench import (
    BenchReport,
    BenchRequest,
    BenchSettings,
    CellFigures,
    HostLoad,
    LoadModel,
    Point,
    RandomSettings,
    ServerDelta,
)

#: (requests done, requests in all or None when open-ended (--duration), decode tok/s of the request that just ended)
Progress = Callable[[int, int | None, float | None], None]
#: The runs of one cell: (requests sent, server delta, wall duration) per repeat.
CellRuns = list[tuple[list[figures.Sent], ServerDelta, float]]


@dataclass
class BenchPlan:
    """What to send: the prompts per category, the load points, the output length, repeats, SLOs."""

    dataset: Dataset
    prompts: dict[str, list[BenchPrompt]]
    concurrency: list[int]
    output_tokens: int
    per_category: int | None = None
    label: str = "run"
    load: LoadModel = field(default_factory=LoadModel)
    repeat: int = 1
    percentiles: list[float] = field(default_factory=lambda: list(latency.DEFAULT_PERCENTILES))
    slo: dict[str, float] = field(default_factory=dict)
    random: RandomSettings | None = None

    def points(self) -> list[Point]:
        """The load points, in run order."""
        return load.points(self.load, self.concurrency)

    def batch(self, category: str, level: int) -> list[BenchPrompt]:
        """The category's prompts, cycled up to at least `level` requests so every slot is busy (closed loop; an
        open-loop point, level 0 or a rate, sends each prompt once)."""
        pool = self.prompts[category]
        return [pool[i % len(pool)] for i in range(max(len(pool), level))]

    def cell_batch(self, category: str, point: Point) -> list[BenchPrompt]:
        """What one cell sends at `point` (before --duration cycles it)."""
        return self.batch(category, point.concurrency if point.request_rate is None else 0)

    def total_requests(self) -> int | None:
        """Measured requests of the whole run (the warm-up not included); None when --duration decides."""
        if self.load.duration_s is not None:
            return None
        return self.repeat * sum(len(self.cell_batch(c, p)) for p in self.points() for c in self.prompts)


@dataclass
class BenchOptions:
    """How to reach the endpoint and whom to tell about progress."""

    api_key: str | None = None
    progress: Progress | None = None
    note: Callable[[str], None] | None = None
    #: Called with the prompt id just before each measured request is sent (a second client can start beside it).
    on_send: Callable[[str], None] | None = None


@dataclass
class Measured:
    """What one pass over the plan measured, before it becomes a report (`--ab` pools several passes)."""

    runs: dict[tuple[int, str], CellRuns] = field(default_factory=dict)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    duration_s: float = 0.0
    host: HostLoad = field(default_factory=lambda: HostLoad(cpus=os.cpu_count() or 1))
    server_version: str | None = None
    endpoint: str = ""


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


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


async def measure_async(
    profile: Profile, endpoint: str, plan: BenchPlan, options: BenchOptions | None = None
) -> Measured:
    """Run the plan against `endpoint`; an endpoint that cannot be reached raises (exit 3)."""
    options = options or BenchOptions()
    say = options.note or (lambda _msg: None)
    base = normalize_endpoint(endpoint)
    out = Measured(endpoint=base)
    out.host.load_start = _loadavg()
    t0 = time.perf_counter()
    total, done = plan.total_requests(), 0
    points = plan.points()
    caps = [p.concurrency for p in points if p.concurrency] or [64]
    async with SmokeClient(
        base,
        api_key=options.api_key,
        request_timeout_s=profile.smoke.request_timeout_s,
        # Open loop without a cap: as many connections as requests in flight (aiohttp needs a number).
        max_connections=max(caps) if all(p.concurrency for p in points) else 1024,
        clock=lambda: time.perf_counter() - t0,
    ) as client:
        await _liveness(client, profile.model.served_name)
        out.server_version = await client.server_version()

        async def one(
            prompt: BenchPrompt,
            point: Point,
            index: int,
            repeat: int = 0,
            arrival: float | None = None,
            measured: bool = True,
        ) -> figures.Sent:
            tokens = prompt.output_tokens or plan.output_tokens
            path, body = request_body(profile, prompt.text, tokens, ignore_eos=True, top_p=profile.smoke.top_p)
            spec = RequestSpec(index, "measured", prompt.id, tokens, None, point.concurrency)
            if options.on_send is not None and measured:
                options.on_send(prompt.id)
            record = build_record(await client.stream(path, body), spec)
            request = figures.compact(
                record,
                prompt.category,
                request_rate=point.request_rate,
                repeat=repeat,
                t_arrival=arrival,
                slo=plan.slo,
            )
            return figures.Sent(record, request)

        first = next(iter(plan.prompts.values()))[0]
        warm = await one(first, Point(concurrency=1), 0, measured=False)
        say(f"warm-up: {'ok' if warm.request.ok else warm.request.error}")
        seed = plan.load.seed
        for p_index, point in enumerate(points):
            for category in plan.prompts:
                runs: CellRuns = []
                for repeat in range(plan.repeat):

                    async def send(
                        prompt: BenchPrompt, i: int, arrival: float | None, point: Point = point, repeat: int = repeat
                    ) -> figures.Sent:
                        nonlocal done
                        sent = await one(prompt, point, i, repeat, arrival)
                        done += 1
                        if options.progress is not None:
                            options.progress(done, total, figures.decode_figure(sent.request))
                        return sent

                    window = await measure_window(
                        client, send, plan.cell_batch(category, point), point, plan.load, seed
                    )
                    seed += 1
                    server = (
                        figures.server_delta(metrics.diff(window.before, window.after))
                        if window.before is not None and window.after is not None
                        else ServerDelta(available=False, error=window.error)
                    )
                    runs.append((window.results, server, window.duration_s))
                out.runs[(p_index, category)] = runs
                cell = figures.pooled(category, point, runs, plan.percentiles, plan.slo)
                say(
                    f"{category} @ {point.name()}: median decode {cell.decode_tok_s.median or 0:.1f} tok/s, "
                    f"{cell.throughput.output_throughput or 0:.1f} output tok/s, {cell.failed} failed"
                )
    out.duration_s = time.perf_counter() - t0
    out.host.load_end = _loadavg()
    return out


def assemble(profile: Profile, plan: BenchPlan, passes: list[Measured]) -> BenchReport:
    """The report of one or more passes over the same plan (each pass's cell runs become repeats of the cell)."""
    points = plan.points()
    cells: list[CellFigures] = []
    overall: list[CellFigures] = []
    requests: list[BenchRequest] = []
    for p_index, point in enumerate(points):
        level: CellRuns = []
        by_repeat: dict[int, CellRuns] = {}
        for category in plan.prompts:
            runs: CellRuns = []
            for n, measured in enumerate(passes):
                for sent, server, duration in measured.runs.get((p_index, category), []):
                    if len(passes) > 1:  # a pass is one repeat: number the requests by it
                        sent = [figures.Sent(s.record, s.request.model_copy(update={"repeat": n})) for s in sent]
                    runs.append((sent, server, duration))
            cells.append(figures.pooled(category, point, runs, plan.percentiles, plan.slo))
            requests += [s.request for sent, _, _ in runs for s in sent]
            level += runs
            for i, run in enumerate(runs):
                by_repeat.setdefault(i, []).append(run)
        groups = list(by_repeat.values()) if len(by_repeat) > 1 else []
        overall.append(figures.pooled(figures.OVERALL, point, level, plan.percentiles, plan.slo, repeats=groups))
    first, last = passes[0], passes[-1]
    host = HostLoad(
        cpus=first.host.cpus,
        load_start=first.host.load_start,
        load_end=max((m.host.load_end for m in passes if m.host.load_end is not None), default=None),
    )
    speculative = profile.speculative.config() if profile.speculative is not None else None
    versions = {"k3deploy": __version__}
    if first.server_version:
        versions["server"] = first.server_version
    report = BenchReport(
        label=plan.label,
        profile=profile.name,
        endpoint=redact_url(first.endpoint),
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
            top_p=profile.smoke.top_p,
            api=profile.smoke.api,
            concurrency=sorted({p.concurrency for p in points}),
            load=plan.load,
            repeat=max(plan.repeat, len(passes)),
            percentiles=plan.percentiles,
            goodput_slo_ms=plan.slo,
            random=plan.random,
        ),
        references=published_references(profile),
        rehearsal=profile.model.rehearsal,
        versions=versions,
        host=host,
        points=points,
        started_at=first.started,
        cells=cells,
        overall=overall,
        requests=requests,
        warnings=figures.token_mismatches(cells)
        + figures.spec_problems(
            cells, profile.speculative.num_speculative_tokens if profile.speculative is not None else None
        )
        + _failures(requests),
    )
    report.finished_at = datetime.now(UTC)
    report.duration_s = sum(m.duration_s for m in passes) if len(passes) > 1 else last.duration_s
    return report


async def run_bench_async(
    profile: Profile, endpoint: str, plan: BenchPlan, options: BenchOptions | None = None
) -> BenchReport:
    """Run the plan against `endpoint` and return the report; an endpoint that cannot be reached raises (exit 3)."""
    return assemble(profile, plan, [await measure_async(profile, endpoint, plan, options)])


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
    """Synchronous entry point for the CLI (on uvloop where installed: less client CPU per token)."""
    return run_fast(run_bench_async(profile, endpoint, plan, options))


def measure(profile: Profile, endpoint: str, plan: BenchPlan, options: BenchOptions | None = None) -> Measured:
    """One pass over the plan, synchronously (`--ab` interleaves passes of its variants)."""
    return run_fast(measure_async(profile, endpoint, plan, options))
