"""The bench report: a versioned, JSON-saveable record of one `k3deploy bench` run. Pure model, no I/O but save/load.

Figures are kept per (category, concurrency) cell and per concurrency overall; every figure's formula is written
into the report (`formulas`), since tools define them differently. Per-request records are compact (no per-chunk
stamps): a 256-request run stays a few hundred kilobytes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from k3deploy.report.load import load_json
from k3deploy.report.smoke import SpecDecodeDelta, Stats

#: Bump on any change that makes an older reader misread a newer report.
BENCH_SCHEMA_VERSION = 1

#: The definition of every figure, as stored in each report.
FORMULAS: dict[str, str] = {
    "decode_tok_s": "per request: (completion_tokens - tokens of the first output chunk) / (t_last_chunk - t_first_chunk); "
    "median, p10, p90 over the cell's successful requests (linear interpolation); a bursty request "
    "(chunks arrived back to back) contributes its e2e_tok_s instead, a lower bound",
    "e2e_tok_s": "per request: completion_tokens / (t_last_chunk - t_send): prefill and queueing included",
    "ttft_ms": "per request: 1000 * (t_first_chunk - t_send), first chunk carrying output tokens; bursty requests left out",
    "tpot_ms": "per request: 1000 * (t_last_chunk - t_first_chunk) / (completion_tokens - tokens of the first chunk); "
    "bursty requests left out",
    "tokens_per_chunk": "per request: completion_tokens / output chunks (cumulative usage per chunk); with speculative "
    "decoding one chunk is one verify step, so its mean cross-checks mean_acceptance_length",
    "aggregate_tok_s": "completion tokens of the cell's requests / (last output chunk - first send) of the cell",
    "server_generation_tokens": "increase of vllm:generation_tokens_total across the cell (scraped before and after it)",
    "acceptance_rate": "increase of vllm:spec_decode_num_accepted_tokens_total / increase of "
    "vllm:spec_decode_num_draft_tokens_total, over the cell",
    "mean_acceptance_length": "1 + increase of accepted tokens / increase of vllm:spec_decode_num_drafts_total (counts "
    "the bonus token)",
    "per_position_acceptance": "increase of vllm:spec_decode_num_accepted_tokens_per_pos_total{position=k} / increase of drafts",
    "speedup": "median decode_tok_s of run B / median decode_tok_s of run A, same cell",
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
    tpot_ms: float | None = None
    tokens_per_chunk: float | None = None
    bursty: bool = False


class ServerDelta(_Model):
    """What `/metrics` said about one cell (before/after deltas, summed over engines)."""

    available: bool
    error: str | None = None
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    spec_decode: SpecDecodeDelta | None = None
    counter_resets: list[str] = Field(default_factory=list)


class CellFigures(_Model):
    """Figures of one category (or `overall`) at one concurrency level."""

    category: str
    concurrency: int
    requests: int
    failed: int
    bursty: int = 0
    completion_tokens: int = Field(description="Sum over every request of the cell, failed ones included.")
    decode_tok_s: Stats
    e2e_tok_s: Stats
    ttft_ms: Stats
    tpot_ms: Stats
    tokens_per_chunk: Stats
    window_s: float | None = None
    aggregate_tok_s: float | None = None
    server: ServerDelta | None = None


class BenchSettings(_Model):
    """What was asked of the server: `bench compare` refuses runs whose settings differ."""

    dataset: str
    subset: str | None = None
    categories: list[str]
    prompt_set_sha256: str
    prompts_per_category: int | None
    output_tokens: int
    temperature: float
    api: str
    ignore_eos: bool = True
    concurrency: list[int]


class BenchReport(_Model):
    """Everything one bench run measured."""

    schema_version: int = BENCH_SCHEMA_VERSION
    kind: Literal["k3deploy.bench"] = "k3deploy.bench"
    label: str
    profile: str
    endpoint: str
    model: str
    speculative: dict[str, Any] | None = Field(
        None, description="The profile's speculative config as served (null: none)."
    )
    settings: BenchSettings
    references: dict[str, float | None] = Field(
        default_factory=dict, description="Published figures from the profile's targets."
    )
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float | None = None
    cells: list[CellFigures] = Field(default_factory=list)
    overall: list[CellFigures] = Field(default_factory=list, description="All categories together, per concurrency.")
    requests: list[BenchRequest] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    formulas: dict[str, str] = Field(default_factory=lambda: dict(FORMULAS))

    def cell(self, category: str, concurrency: int) -> CellFigures | None:
        """The figures of one cell (`overall` for all categories)."""
        pool = self.overall if category == "overall" else self.cells
        return next((c for c in pool if c.category == category and c.concurrency == concurrency), None)

    def to_json(self) -> str:
        """The report as indented JSON, as `--report` writes it."""
        return self.model_dump_json(indent=1) + "\n"

    def save(self, path: Path) -> None:
        """Write the report as indented JSON (tests and tools; the CLI writes through fileio/write.py)."""
        path.write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> BenchReport:
        """Read a report written by `save`; refuses another kind or schema version."""
        data = load_json(path, "bench report")
        if not isinstance(data, dict) or data.get("kind") != "k3deploy.bench":
            raise ValueError(f"{path}: not a k3deploy bench report")
        if data.get("schema_version") != BENCH_SCHEMA_VERSION:
            raise ValueError(
                f"{path}: bench report schema_version {data.get('schema_version')}, "
                f"this k3deploy reads {BENCH_SCHEMA_VERSION}"
            )
        return cls.model_validate(data)
