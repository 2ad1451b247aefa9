"""Smoke orchestration: liveness, correctness, warm-up, measured bs=1 requests between two /metrics scrapes,
the concurrency sweep, then the verdict. The only smoke module that knows the order.

`run_smoke(profile, endpoint, options)` is what the CLI and the `up` pipeline call; it always returns a report
(failures are checks in it) and raises only for bad usage (a malformed endpoint URL).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from k3deploy.errors import EndpointError
from k3deploy.measure import metrics, summary
from k3deploy.measure.dispatch import dispatch
from k3deploy.measure.per_request import own_acceptance
from k3deploy.measure.record import RequestSpec, build_record
from k3deploy.measure.request import normalize_endpoint, request_body
from k3deploy.measure.window import measure_window
from k3deploy.profile import Profile
from k3deploy.redact import redact_url
from k3deploy.report.bench import LoadModel, Point
from k3deploy.report.model import CheckResult, Status
from k3deploy.report.smoke import MetricsDelta, RequestRecord, SmokeReport
from k3deploy.report.smoke import (
    exit_code as exit_code,  # where callers (targets/kubernetes/upgrade.py, the tests) import it
)
from k3deploy.smoke import correctness, prompts, verdict
from k3deploy.smoke.context import CONTEXT, ContextFit, fit_context, prompt_allowance
from k3deploy.smoke.ready import wait_ready

if TYPE_CHECKING:
    import aiohttp

    from k3deploy.measure.client import SmokeClient


@dataclass
class SmokeOptions:
    """How to reach the endpoint; everything about *what* to run comes from the profile."""

    api_key: str | None = None
    #: aiohttp client middlewares that see every request (a test's stand-in for what lies between client and server).
    middlewares: tuple[aiohttp.ClientMiddlewareType, ...] = ()
    progress: Callable[[str], None] | None = None
    #: Where the wait for readiness (smoke.ready_timeout_s) says what it waits for: always shown, a Job's log needs it.
    notice: Callable[[str], None] | None = None


@dataclass
class _State:
    """What the run has observed so far; the verdict is drawn from it even when the run stops early."""

    liveness: verdict.LivenessFacts | None = None
    blocked_by: str | None = None
    probes: list[tuple[str, bool, str]] = field(default_factory=list)
    records: list[RequestRecord] = field(default_factory=list)
    before: metrics.MetricsSnapshot | None = None
    after: metrics.MetricsSnapshot | None = None
    metrics_error: str | None = None
    stopped: str | None = None
    #: The output budgets that fit the served model's context (smoke/context.py), set once liveness passed.
    context: ContextFit | None = None

    def phase(self, name: str) -> list[RequestRecord]:
        return [r for r in self.records if r.phase == name]


class _Run:
    def __init__(self, profile: Profile, client: SmokeClient, state: _State, progress: Callable[[str], None]) -> None:
        self.profile, self.client, self.state, self.say = profile, client, state, progress

    async def one(self, spec: RequestSpec, prompt: str, *, probe: bool = False) -> RequestRecord:
        """One streamed request: a correctness probe (greedy, reasoning off, ends at EOS) or a measured one, sampled
        as smoke.temperature / top_p / ignore_eos say."""
        smoke = self.profile.smoke
        if probe:
            path, body = request_body(
                self.profile, prompt, spec.max_tokens, ignore_eos=False, reasoning_off=True, temperature=0.0
            )
        else:
            path, body = request_body(
                self.profile, prompt, spec.max_tokens, ignore_eos=smoke.ignore_eos, top_p=smoke.top_p
            )
        record = build_record(await self.client.stream(path, body), spec)
        self.state.records.append(record)
        return record

    async def liveness(self) -> bool:
        try:
            status = await self.client.health()
            models = tuple(await self.client.models()) if status == 200 else None
            self.state.liveness = verdict.LivenessFacts(status, models)
        except EndpointError as exc:
            self.state.liveness = verdict.LivenessFacts(error=exc.message, unauthorized=exc.kind == "unauthorized")
            if exc.kind in ("unreachable", "unauthorized", "timeout"):
                self.state.blocked_by = exc.message
        facts = self.state.liveness
        alive = (
            facts.error is None
            and facts.health_status == 200
            and self.profile.model.served_name in (facts.models or ())
        )
        if alive:
            smoke = self.profile.smoke
            # Only what this run sends: its tier's prompts (as many as the measured phase and the sweep take), and
            # the correctness probes with their budget only when the profile asks for them.
            sent = prompts.select(smoke.tier, max(smoke.requests + 1, *smoke.concurrency))
            probes = [p.prompt for p in correctness.PROBES] if smoke.correctness else []
            self.state.context = fit_context(
                self.client.max_model_len.get(self.profile.model.served_name),
                smoke.output_tokens,
                smoke.correctness_max_tokens if smoke.correctness else 0,
                prompt_allowance(probes + [p.text for p in sent]),
            )
            if self.state.context.check is not None:
                self.say(f"{CONTEXT}: {self.state.context.check.detail}")
        return alive and not (self.state.context is not None and self.state.context.blocks)

    @property
    def output_tokens(self) -> int:
        """smoke.output_tokens, capped to the served context."""
        return self.state.context.output_tokens if self.state.context else self.profile.smoke.output_tokens

    async def correctness(self) -> None:
        budget = (
            self.state.context.correctness_max_tokens
            if self.state.context
            else self.profile.smoke.correctness_max_tokens
        )
        for i, probe in enumerate(correctness.PROBES):
            spec = RequestSpec(i, "correctness", probe.id, budget, expect_full=False, keep_text=True)
            record = await self.one(spec, probe.prompt, probe=True)
            ok, detail = (False, record.error or "") if not record.ok else correctness.judge_answer(probe, record.text)
            self.state.probes.append((probe.id, ok, detail))
            self.say(f"correctness {probe.id}: {'right' if ok else 'WRONG'}")

    async def measured(self) -> None:
        """The warm-up, then one measurement window (k3deploy.measure.window, as each bench cell): bs=1 requests one
        after another between two /metrics scrapes."""
        smoke = self.profile.smoke
        chosen = prompts.select(smoke.tier, smoke.requests + 1)
        warm = await self.one(
            RequestSpec(0, "warmup", chosen[0].id, self.output_tokens, chosen[0].tier, expect_full=smoke.ignore_eos),
            chosen[0].text,
        )
        self.say(f"warm-up: {'ok' if warm.ok else warm.error}")

        async def send(prompt: prompts.Prompt, i: int, _arrival: float | None) -> RequestRecord:
            rec = await self.one(
                RequestSpec(i, "measured", prompt.id, self.output_tokens, prompt.tier, expect_full=smoke.ignore_eos),
                prompt.text,
            )
            rate = f"{rec.decode_tok_s:.2f} decode tok/s" if rec.decode_tok_s else (rec.error or "no rate")
            self.say(f"request {i + 1}/{smoke.requests} ({prompt.tier}): {rate}")
            return rec

        window = await measure_window(self.client, send, chosen[1:], Point(concurrency=1), LoadModel(), 0)
        self.state.before, self.state.after = window.before, window.after
        self.state.metrics_error = self.state.metrics_error or window.error

    async def sweep(self) -> None:
        """Each concurrency level above 1: its requests offered closed-loop, `level` in flight (bench's dispatch)."""
        smoke = self.profile.smoke
        for level in sorted({c for c in smoke.concurrency if c > 1}):
            chosen = prompts.select(smoke.tier, max(smoke.requests, level))

            async def send(prompt: prompts.Prompt, i: int, _arrival: float | None, level: int = level) -> RequestRecord:
                return await self.one(
                    RequestSpec(
                        i, "sweep", prompt.id, self.output_tokens, prompt.tier, level, expect_full=smoke.ignore_eos
                    ),
                    prompt.text,
                )

            await dispatch(send, chosen, Point(concurrency=level), LoadModel(), 0, self.client.clock)
            self.say(f"concurrency {level}: done")


async def _ready(client: SmokeClient, timeout_s: float, state: _State, options: SmokeOptions) -> bool:
    """Wait for /health (outside the overall timeout: it bounds the test, not the model's loading); False when
    the endpoint did not become ready, with the liveness failure and the exit-3 reason recorded."""
    try:
        why = await wait_ready(client, timeout_s, options.notice or (lambda _msg: None))
    except EndpointError:
        return True  # a refused key: liveness asks again and reports it
    if why is None:
        return True
    state.liveness = verdict.LivenessFacts(error=why, not_ready=True)
    state.blocked_by = why
    return False


def _metrics_delta(state: _State) -> MetricsDelta:
    if state.before is not None and state.after is not None:
        return metrics.diff(state.before, state.after)
    return MetricsDelta(available=False, error=state.metrics_error or "the measured phase did not complete")


def _checks(profile: Profile, state: _State, report: SmokeReport) -> list[CheckResult]:
    out = [
        verdict.judge_liveness(state.liveness or verdict.LivenessFacts(error="not checked"), profile.model.served_name)
    ]
    later = (verdict.CORRECTNESS, verdict.THROUGHPUT, verdict.SPECULATIVE, verdict.DECODE_TARGET)
    if out[0].status is Status.FAIL:
        return out + [CheckResult(name=n, status=Status.SKIP, detail="not run: liveness failed") for n in later]
    if state.context is not None and state.context.check is not None:
        out.append(state.context.check)
        if state.context.blocks:
            return out + [
                CheckResult(name=n, status=Status.SKIP, detail="not run: the served context is too short")
                for n in later
            ]
    out.append(verdict.judge_correctness(profile.smoke.correctness, state.probes))
    assert report.summary is not None  # liveness passed, so run_smoke summarized the measured phase
    out.append(verdict.judge_throughput(state.phase("measured") + state.phase("sweep"), report.summary))
    out.append(
        verdict.judge_speculative(
            profile.speculative is not None,
            profile.targets.min_acceptance_length,
            report.metrics,
            report.summary,
            client_tokens=sum(r.completion_tokens or 0 for r in state.phase("measured")),
            num_speculative_tokens=profile.speculative.num_speculative_tokens if profile.speculative else None,
            require_attribution=profile.smoke.require_attribution,
            per_request=own_acceptance(state.phase("measured")),
        )
    )
    out.append(
        verdict.judge_decode_target(
            profile.targets.decode_tok_s,
            profile.smoke.tier,
            report.summary,
            profile.targets.peak_decode_tok_s,
            profile.targets.baseline_decode_tok_s,
            tolerance=profile.smoke.decode_tolerance,
        )
    )
    if state.stopped:
        out.append(
            CheckResult(
                name="overall timeout",
                status=Status.FAIL,
                target=profile.smoke.overall_timeout_s,
                detail=state.stopped,
                hint="raise smoke.overall_timeout_s or lower smoke.requests / output_tokens",
            )
        )
    return out


async def run_smoke_async(profile: Profile, endpoint: str, options: SmokeOptions | None = None) -> SmokeReport:
    """Run every smoke check against `endpoint`; see the module docstring."""
    # The HTTP client (aiohttp) loads only when smoke runs.
    from k3deploy.measure.client import SmokeClient

    options = options or SmokeOptions()
    base = normalize_endpoint(endpoint)
    smoke = profile.smoke
    started, t0 = datetime.now(UTC), time.perf_counter()
    state = _State()
    levels = max([*smoke.concurrency, 1])
    async with SmokeClient(
        base,
        api_key=options.api_key,
        request_timeout_s=smoke.request_timeout_s,
        max_connections=levels,
        middlewares=options.middlewares,
        clock=lambda: time.perf_counter() - t0,
    ) as client:
        run = _Run(profile, client, state, options.progress or (lambda _msg: None))

        ready = not smoke.ready_timeout_s or await _ready(client, smoke.ready_timeout_s, state, options)

        async def everything() -> None:
            if not ready or not await run.liveness():
                return
            if smoke.correctness:
                await run.correctness()
            await run.measured()
            await run.sweep()

        try:
            await asyncio.wait_for(everything(), timeout=smoke.overall_timeout_s)
        except TimeoutError:
            state.stopped = f"the run passed smoke.overall_timeout_s ({smoke.overall_timeout_s:g} s) and was stopped"
            if state.liveness is None and state.blocked_by is None:
                # Nothing answered at all (a stalled /health): the endpoint could not be tested, exit 3, not a
                # failed check of a server that answered.
                state.blocked_by = (
                    f"{base}/health did not answer within smoke.overall_timeout_s ({smoke.overall_timeout_s:g} s)"
                )
                state.liveness = verdict.LivenessFacts(error=state.blocked_by)

    measured = state.phase("measured")
    points = []
    if len(set(smoke.concurrency)) > 1 and measured:
        points.append(summary.sweep_point(1, measured))
    for level in sorted({c for c in smoke.concurrency if c > 1}):
        recs = [r for r in state.phase("sweep") if r.concurrency == level]
        if recs:
            points.append(summary.sweep_point(level, recs))
    report = SmokeReport(
        profile=profile.name,
        endpoint=redact_url(base),
        server_model=profile.model.served_name
        if state.liveness and profile.model.served_name in (state.liveness.models or ())
        else None,
        settings=smoke.model_dump(mode="json"),
        targets=profile.targets.model_dump(mode="json"),
        started_at=started,
        blocked_by=state.blocked_by,
        requests=state.records,
        summary=summary.summarize(measured, points) if state.liveness and not state.liveness.error else None,
        metrics=_metrics_delta(state) if measured else None,
    )
    report.checks = _checks(profile, state, report)
    report.finished_at = datetime.now(UTC)
    report.duration_s = time.perf_counter() - t0
    return report


def run_smoke(profile: Profile, endpoint: str, options: SmokeOptions | None = None) -> SmokeReport:
    """Synchronous entry point for the CLI and the `up` pipeline."""
    return asyncio.run(run_smoke_async(profile, endpoint, options))
