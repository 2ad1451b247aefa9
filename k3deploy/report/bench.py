"""The bench report: a versioned, JSON-saveable record of one `k3deploy bench` run. Pure model, no I/O but save/load.

Figures are kept per (category, concurrency) cell and per concurrency overall; every figure's formula is written
into the report (`formulas`), since tools define them differently. Per-request records are compact (no per-chunk
stamps): a 256-request run stays a few hundred kilobytes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from k3deploy.kobject import JsonObject
from k3deploy.report.load import load_json
from k3deploy.report.smoke import SpecDecodeDelta, Stats

#: Bump on any change that makes an older reader misread a newer report.
BENCH_SCHEMA_VERSION = 2

#: The definition of every figure, as stored in each report.
FORMULAS: dict[str, str] = {
    "ttft_ms": "as vllm bench serve (vllm/benchmarks/serve.py, calculate_metrics): per request 1000 * (first output "
    "chunk - send); mean, std, median and percentiles (numpy's linear interpolation) over the successful requests",
    "tpot_ms": "as vllm bench serve: per request 1000 * (e2el - ttft) / (output_tokens - 1), requests with more than one "
    "output token",
    "itl_ms": "as vllm bench serve: every gap between consecutive output chunks, pooled over the successful requests "
    "(with speculative decoding one chunk is one verify step of several tokens)",
    "e2el_ms": "as vllm bench serve: per request 1000 * (last output chunk - send)",
    "request_throughput": "as vllm bench serve: completed requests / duration_s",
    "output_throughput": "as vllm bench serve: output tokens of the completed requests / duration_s",
    "total_token_throughput": "as vllm bench serve: (prompt + output tokens of the completed requests) / duration_s",
    "request_goodput": "as vllm bench serve --goodput: completed requests whose ttft, tpot (0 for one output token) and "
    "e2el are each <= its SLO in ms / duration_s",
    "duration_s": "wall time from the cell's first dispatch until its last request finished (as vllm bench serve's "
    "benchmark duration); overall: the sum over its cells, which run one after another",
    "decode_tok_s": "k3deploy's per-request figure (SPEED-Bench bs=1): (completion_tokens - tokens of the first output "
    "chunk) / (t_last_chunk - t_first_chunk); median, p10, p90 over the successful requests; a bursty request "
    "(chunks arrived back to back) contributes its e2e_tok_s instead, a lower bound",
    "e2e_tok_s": "per request: completion_tokens / (t_last_chunk - t_send): prefill and queueing included",
    "output_tok_s": "output tokens of the cell's completed requests / duration_s: vllm bench serve's output "
    "throughput (its headline tok/s). Unlike decode_tok_s it includes TTFT (prefill) and, at concurrency 1, the "
    "gaps between one request's end and the next's send",
    "tokens_per_chunk": "per request: completion_tokens / output chunks (cumulative usage per chunk); with speculative "
    "decoding one chunk is one verify step, so its mean cross-checks mean_acceptance_length",
    "aggregate_tok_s": "completion tokens of the cell's requests / (last output chunk - first send) of the cell",
    "server_generation_tokens": "increase of vllm:generation_tokens_total across the cell (scraped before and after it)",
    "acceptance_rate": "increase of vllm:spec_decode_num_accepted_tokens_total / increase of "
    "vllm:spec_decode_num_draft_tokens_total, over the cell",
    "mean_acceptance_length": "1 + increase of accepted tokens / increase of vllm:spec_decode_num_drafts_total (counts "
    "the bonus token)",
    "per_position_acceptance": "increase of vllm:spec_decode_num_accepted_tokens_per_pos_total{position=k} / increase of drafts",
    "request_rate": "open loop: send times follow vllm bench serve's get_request: gaps drawn from a gamma distribution "
    "of shape burstiness and scale 1 / (rate * burstiness) (burstiness 1: Poisson), cumulated and rescaled so the "
    "last send is at requests / rate; closed loop (no rate): `concurrency` requests in flight at all times",
    "speedup": "median decode_tok_s of run B / median decode_tok_s of run A, same cell; with repeats or rounds, the "
    "median of the per-round ratios, spread = min..max of them",
    "spread": "(max - min) / median of the per-repeat median decode_tok_s of a cell",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BenchRequest(_Model):
    """One streamed request, compact: stamps relative to the run's start, and its own figures."""

    category: str
    concurrency: int
    prompt_id: str
    ok: bool
    error: str | None = None
    t_send: float
    t_end: float
    ttft_s: float | None = None
    t_last: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunks: int = 0
    decode_tok_s: float | None = None
    e2e_tok_s: float | None = None
    tpot_ms: float | None = Field(None, description="(e2el - ttft) / (output tokens - 1), as vllm bench serve.")
    e2el_ms: float | None = None
    itl_ms_mean: float | None = None
    itl_ms_max: float | None = None
    tokens_per_chunk: float | None = None
    bursty: bool = False
    request_rate: float | None = Field(None, description="The open-loop rate it was sent at (null: closed loop).")
    repeat: int = 0
    t_arrival: float | None = Field(None, description="Scheduled send (open loop); t_send - t_arrival is queueing.")
    good: bool | None = Field(None, description="Met every --goodput SLO (null: none given).")


class ServerDelta(_Model):
    """What `/metrics` said about one cell (before/after deltas, summed over engines)."""

    available: bool
    error: str | None = None
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    spec_decode: SpecDecodeDelta | None = None
    counter_resets: list[str] = Field(default_factory=list)


class Dist(_Model):
    """A distribution in milliseconds, as `vllm bench serve` reports one: mean, std, median, percentiles."""

    count: int
    mean: float | None = None
    std: float | None = None
    median: float | None = None
    percentiles: dict[str, float] = Field(default_factory=dict, description="p50, p90, p95, p99 and --percentiles.")

    def at(self, q: float) -> float | None:
        """The q-th percentile, if reported."""
        return self.percentiles.get(f"p{q:g}")


class Throughput(_Model):
    """Throughput and goodput of a cell, as `vllm bench serve` computes them."""

    duration_s: float | None = None
    completed: int = 0
    failed: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    good: int | None = None
    request_goodput: float | None = None
    slo_ms: dict[str, float] = Field(default_factory=dict)


class RepeatFigures(_Model):
    """One repeat of a cell (`--repeat N`): the figures whose spread says whether the cell is stable."""

    decode_tok_s: float | None = None
    output_throughput: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None


class CellFigures(_Model):
    """Figures of one category (or `overall`) at one concurrency level."""

    category: str
    concurrency: int = Field(description="Requests allowed in flight: the level, or --max-concurrency (0: no cap).")
    request_rate: float | None = Field(None, description="Open-loop requests/s (null: closed loop).")
    requests: int
    failed: int
    bursty: int = 0
    completion_tokens: int = Field(description="Sum over every request of the cell, failed ones included.")
    decode_tok_s: Stats = Field(description="Per-request decode tok/s, TTFT excluded (what smoke's gate judges).")
    output_tok_s: float | None = Field(
        None, description="Output tok/s, TTFT included: vllm bench serve's output throughput (formulas.output_tok_s)."
    )
    e2e_tok_s: Stats
    ttft_ms: Dist = Field(default_factory=lambda: Dist(count=0))
    tpot_ms: Dist = Field(default_factory=lambda: Dist(count=0))
    itl_ms: Dist = Field(default_factory=lambda: Dist(count=0))
    e2el_ms: Dist = Field(default_factory=lambda: Dist(count=0))
    throughput: Throughput = Field(default_factory=Throughput)
    tokens_per_chunk: Stats
    window_s: float | None = None
    aggregate_tok_s: float | None = None
    server: ServerDelta | None = None
    repeats: list[RepeatFigures] = Field(default_factory=list, description="Per repeat, with --repeat N > 1.")
    spread: float | None = Field(None, description="(max - min) / median of the repeats' median decode tok/s.")


class LoadModel(_Model):
    """How requests were offered: closed loop (a fixed number in flight) or open loop (arrivals at a rate)."""

    kind: Literal["closed", "open"] = "closed"
    request_rates: list[float] = Field(default_factory=list, description="Open loop: the rates swept (req/s).")
    burstiness: float = Field(1.0, description="Gamma shape of the gaps (1: Poisson), vLLM's --burstiness.")
    max_concurrency: int | None = Field(None, description="Open loop: cap on requests in flight (null: none).")
    duration_s: float | None = Field(None, description="Keep offering requests for this long (null: each prompt once).")
    seed: int = 0


class RandomSettings(_Model):
    """`--dataset random`: vLLM's RandomDataset parameters and the tokenizer it counted with."""

    input_len: int
    output_len: int
    range_ratio: float
    seed: int
    tokenizer: str


class HostLoad(_Model):
    """The client machine's load (os.getloadavg) at the start and end of the run, against its CPU count."""

    cpus: int
    load_start: float | None = None
    load_end: float | None = None

    def overloaded(self) -> bool:
        """The 1-minute load exceeded the CPU count at either end: timings then measure the host, not the server."""
        return any(v is not None and v > self.cpus for v in (self.load_start, self.load_end))


class BenchSettings(_Model):
    """What was asked of the server: `bench compare` refuses runs whose settings differ."""

    dataset: str
    subset: str | None = None
    categories: list[str]
    prompt_set_sha256: str
    prompts_per_category: int | None
    output_tokens: int
    temperature: float
    top_p: float | None = Field(None, description="top_p of the requests (null: the server's default, 1.0).")
    api: str
    ignore_eos: bool = True
    concurrency: list[int]
    load: LoadModel = Field(default_factory=lambda: LoadModel())
    repeat: int = 1
    percentiles: list[float] = Field(default_factory=lambda: [50.0, 90.0, 95.0, 99.0])
    goodput_slo_ms: dict[str, float] = Field(default_factory=dict)
    random: RandomSettings | None = None


class Point(_Model):
    """One load point: a closed-loop concurrency level, or an open-loop rate (with its concurrency cap)."""

    concurrency: int
    request_rate: float | None = None

    def name(self) -> str:
        """`concurrency 4` or `rate 2 req/s (max concurrency 4)`."""
        if self.request_rate is None:
            return f"concurrency {self.concurrency}"
        cap = f"max concurrency {self.concurrency}" if self.concurrency else "no concurrency cap"
        return f"rate {self.request_rate:g} req/s ({cap})"


class BenchReport(_Model):
    """Everything one bench run measured."""

    schema_version: int = BENCH_SCHEMA_VERSION
    kind: Literal["k3deploy.bench"] = "k3deploy.bench"
    label: str
    profile: str
    endpoint: str
    model: str
    speculative: JsonObject | None = Field(None, description="The profile's speculative config as served (null: none).")
    settings: BenchSettings
    references: dict[str, float | None] = Field(
        default_factory=dict, description="Published figures from the profile's targets."
    )
    rehearsal: bool = Field(False, description="The model is the rehearsal one: figures say nothing of Kimi K3.")
    versions: dict[str, str] = Field(default_factory=dict, description="k3deploy's and the server's versions.")
    host: HostLoad | None = None
    points: list[Point] = Field(default_factory=list, description="The load points, in the order run.")
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float | None = None
    cells: list[CellFigures] = Field(default_factory=list)
    overall: list[CellFigures] = Field(default_factory=list, description="All categories together, per concurrency.")
    requests: list[BenchRequest] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="Caveats that fail nothing, e.g. a speedup that is not meaningful."
    )
    formulas: dict[str, str] = Field(default_factory=lambda: dict(FORMULAS))

    def cell(self, category: str, concurrency: int, request_rate: float | None = None) -> CellFigures | None:
        """The figures of one cell (`overall` for all categories) at a load point."""
        pool = self.overall if category == "overall" else self.cells
        return next(
            (
                c
                for c in pool
                if c.category == category and c.concurrency == concurrency and c.request_rate == request_rate
            ),
            None,
        )

    def first_point(self) -> Point:
        """The first load point run (the lowest concurrency, or the first rate)."""
        if self.points:
            return self.points[0]
        return Point(concurrency=min(self.settings.concurrency))

    def to_json(self) -> str:
        """The report as indented JSON, as `--report` writes it."""
        return self.model_dump_json(indent=1) + "\n"

    @classmethod
    def load(cls, path: Path) -> BenchReport:
        """Read a report k3deploy wrote (`to_json`); refuses another kind or schema version."""
        data = load_json(path, "bench report")
        if not isinstance(data, dict) or data.get("kind") != "k3deploy.bench":
            raise ValueError(f"{path}: not a k3deploy bench report")
        if data.get("schema_version") != BENCH_SCHEMA_VERSION:
            raise ValueError(
                f"{path}: bench report schema_version {data.get('schema_version')}, "
                f"this k3deploy reads {BENCH_SCHEMA_VERSION}"
            )
        return cls.model_validate(data)


# -- `bench compare` ---------------------------------------------------------------------------------------------


class SpeedupRow(BaseModel):
    """One cell across runs: each run's median decode tok/s (TTFT excluded) and output tok/s (TTFT included), and
    the speedup of decode tok/s over the first run."""

    category: str
    concurrency: int
    request_rate: float | None = None
    decode_tok_s: list[float | None]
    output_tok_s: list[float | None] = Field(
        default_factory=list, description="Per run, output tok/s (TTFT included); the median over its rounds."
    )
    speedup: list[float | None]
    speedup_low: list[float | None] = []
    speedup_high: list[float | None] = []
    samples: list[int] = []
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
    rounds: int = 1
    verdict: str | None = None
    formula: str = FORMULAS["speedup"]
