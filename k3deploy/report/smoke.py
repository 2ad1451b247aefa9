"""The smoke report: a versioned, JSON-saveable record of one `k3deploy smoke` run. Pure model, no I/O but save/load.

Times inside a run are seconds on the client's monotonic clock relative to the run's start (`started_at` gives the
wall-clock anchor), so records from one run can be laid on one axis without clock jumps.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from k3deploy.errors import CheckFailed, EnvironmentProblem, K3DeployError
from k3deploy.kobject import JsonObject
from k3deploy.report.load import load_json
from k3deploy.report.model import CheckResult, Status, worst

#: Bump on any change that makes an older reader misread a newer report.
SMOKE_SCHEMA_VERSION = 1

Tier = Literal["low_entropy", "high_entropy"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RequestSpecDecode(_Model):
    """One response's own speculative-decoding counts (vLLM's `--per-request-spec-decode-metrics`, the final chunk's
    `metrics.speculative_decoding`, vllm/entrypoints/generate/base/protocol.py SpeculativeDecodingMetrics)."""

    steps: int = Field(ge=0, description="Verify steps of this request (num_spec_steps).")
    drafted: int = Field(ge=0, description="Draft tokens proposed (num_draft_tokens).")
    accepted: int = Field(ge=0, description="Draft tokens accepted (num_accepted_draft_tokens), the bonus not counted.")
    num_spec_tokens: int = Field(ge=0, description="The server's num_speculative_tokens.")


class RequestRecord(_Model):
    """One streamed request: raw stamps and what follows from them."""

    index: int = Field(description="Order of the request within its phase.")
    phase: Literal["warmup", "measured", "sweep", "correctness"]
    concurrency: int = 1
    prompt_id: str
    tier: Tier | None = None
    ok: bool
    error: str | None = None
    max_tokens: int
    t_send: float = Field(description="Seconds since the run started when the request was sent.")
    t_first: float | None = Field(None, description="Arrival of the first chunk carrying output tokens.")
    t_last: float | None = Field(None, description="Arrival of the last chunk carrying output tokens.")
    t_end: float = Field(description="When the stream ended (or failed).")
    prompt_tokens: int | None = None
    completion_tokens: int | None = Field(None, description="From the server's usage, never from a client tokenizer.")
    finish_reason: str | None = None
    per_chunk_usage: bool = Field(False, description="Every chunk carried cumulative usage (continuous_usage_stats).")
    chunk_offsets_s: list[float] = Field(
        default_factory=list, description="Output-chunk arrivals, seconds after t_send."
    )
    chunk_tokens: list[int] = Field(
        default_factory=list, description="Tokens per output chunk; empty without per-chunk usage."
    )
    malformed_lines: int = 0
    ttft_s: float | None = None
    decode_tok_s: float | None = Field(None, description="(tokens after the first chunk) / (t_last - t_first).")
    tpot_ms: float | None = None
    e2e_tok_s: float | None = Field(
        None, description="completion_tokens / (t_last - t_send): prefill included, a lower bound of decode."
    )
    tokens_per_chunk: float | None = None
    bursty: bool = Field(
        False, description="Chunks arrived in bursts (buffering proxy, starved API server): decode rate unknowable."
    )
    text: str | None = Field(None, description="The answer; kept for correctness probes only.")
    spec_decode: RequestSpecDecode | None = Field(
        None, description="The server's per-request spec-decode counts, when it serves with them."
    )


class Stats(_Model):
    """Distribution of one figure: linear-interpolated percentiles, as numpy's default."""

    count: int
    p10: float | None = None
    median: float | None = None
    p90: float | None = None
    mean: float | None = None


class TierSummary(_Model):
    """Figures over the successful measured requests of one tier (or all of them)."""

    requests: int
    failed: int
    bursty: int = Field(
        0,
        description="Successful requests whose chunks arrived in bursts: no TTFT/TPOT, and their "
        "end-to-end tok/s (a lower bound) stands in for their decode tok/s.",
    )
    completion_tokens: int
    decode_tok_s: Stats
    ttft_s: Stats
    tpot_ms: Stats
    tokens_per_chunk: Stats = Field(
        description="Mean tokens per output chunk per request; count 0 without per-chunk usage."
    )


class SweepPoint(_Model):
    """One concurrency level: aggregate throughput over its own wall-clock window."""

    concurrency: int
    requests: int
    failed: int
    completion_tokens: int
    window_s: float
    aggregate_tok_s: float | None
    median_decode_tok_s: float | None


class SmokeSummary(_Model):
    """Batch-size-1 figures: per tier, overall, and the aggregate over the measured window."""

    tiers: dict[str, TierSummary]
    overall: TierSummary
    window_s: float | None = Field(None, description="First measured send to last measured token.")
    aggregate_tok_s: float | None = Field(None, description="Measured completion tokens / window_s.")
    sweep: list[SweepPoint] = Field(default_factory=list)


class SpecDecodeDelta(_Model):
    """Speculative-decoding counters over the measured window, summed across engines."""

    drafts: float
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: dict[int, float] = Field(default_factory=dict)
    acceptance_rate: float | None = Field(None, description="accepted / draft_tokens.")
    mean_acceptance_length: float | None = Field(None, description="1 + accepted / drafts (counts the bonus token).")
    per_position_rates: dict[int, float] = Field(default_factory=dict, description="accepted at position / drafts.")


class MetricsDelta(_Model):
    """What `/metrics` said before and after the measured requests."""

    available: bool = Field(description="Both scrapes succeeded and parsed.")
    error: str | None = None
    window_s: float | None = Field(None, description="Between the two scrapes.")
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    server_tok_s: float | None = Field(None, description="generation_tokens / window_s: the server's own figure.")
    spec_decode: SpecDecodeDelta | None = Field(None, description="None when the server exports no spec-decode series.")
    counter_resets: list[str] = Field(
        default_factory=list, description="Series that went backwards (server restarted)."
    )


class SmokeReport(_Model):
    """Everything one smoke run found; `checks` decide the exit code."""

    schema_version: int = SMOKE_SCHEMA_VERSION
    kind: Literal["k3deploy.smoke"] = "k3deploy.smoke"
    profile: str
    endpoint: str
    server_model: str | None = Field(None, description="The served model name the endpoint listed and was tested.")
    settings: JsonObject = Field(default_factory=dict, description="The profile's smoke section as run (after flags).")
    targets: JsonObject = Field(default_factory=dict, description="The profile's targets as judged.")
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float | None = None
    blocked_by: str | None = Field(
        None, description="Why the endpoint could not be tested at all (unreachable, refused the key)."
    )
    checks: list[CheckResult] = Field(default_factory=list)
    requests: list[RequestRecord] = Field(default_factory=list)
    summary: SmokeSummary | None = None
    metrics: MetricsDelta | None = None
    allreduce_backend: str = Field(
        "unknown",
        description="The cross-node all-reduce backend the leader's log reports (mnnvl, trtllm, '<backend> (failed)'); "
        "unknown when the log was not read or does not say.",
    )

    @property
    def status(self) -> Status:
        """Worst status over the checks."""
        return worst(self.checks)

    def raise_for_status(self) -> None:
        """The one verdict -> exit-code mapping (as httpx's `Response.raise_for_status`).

        Returns when every check passed (or warned, or skipped); raises CheckFailed (exit 1) when a check or
        target failed, EnvironmentProblem (exit 3) when the endpoint could not be tested at all.
        """
        if self.blocked_by is not None:
            raise EnvironmentProblem(
                f"endpoint {self.endpoint} cannot be tested: {self.blocked_by}",
                hint=next((c.hint for c in self.checks if c.hint), None),
            )
        if self.status is Status.FAIL:
            failed = [c for c in self.checks if c.status is Status.FAIL]
            raise CheckFailed(
                "smoke failed: " + "; ".join(f"{c.name}: {c.detail}" for c in failed),
                hint=failed[0].hint if failed else None,
            )

    def failure(self) -> str | None:
        """Why a gate on this report does not pass (None when it does): what blocked it, else its failed checks."""
        if self.blocked_by is None and self.status is not Status.FAIL:
            return None
        failed = [f"{c.name}: {c.detail}" for c in self.checks if c.status is Status.FAIL]
        return self.blocked_by or "; ".join(failed) or self.status.value

    def check(self, name: str) -> CheckResult | None:
        """The check called `name`, if it ran."""
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> str:
        """The report as indented JSON, as `--report` writes it."""
        return self.model_dump_json(indent=2) + "\n"

    @classmethod
    def load(cls, path: Path) -> SmokeReport:
        """Read a report k3deploy wrote (`to_json`); refuses other schema versions."""
        data = load_json(path, "smoke report")
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SMOKE_SCHEMA_VERSION:
            raise ValueError(
                f"{path}: smoke report schema_version {version}, this k3deploy reads {SMOKE_SCHEMA_VERSION}"
            )
        return cls.model_validate(data)


def exit_code(report: SmokeReport) -> int:
    """The exit code `report.raise_for_status()` ends the CLI with: 0 passed, 1 a check failed, 3 untestable."""
    try:
        report.raise_for_status()
    except K3DeployError as exc:
        return exc.exit_code
    return 0
