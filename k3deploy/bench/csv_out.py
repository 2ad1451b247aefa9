"""`bench --csv FILE`: one row per measured request of every run, its figures as the JSON report holds them."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from k3deploy.report.bench import BenchReport

#: The columns, in order: the run, the load point, the request and its vLLM-defined figures (ms), k3deploy's own.
COLUMNS = (
    "run",
    "category",
    "concurrency",
    "request_rate",
    "repeat",
    "prompt_id",
    "ok",
    "t_arrival",
    "t_send",
    "ttft_ms",
    "tpot_ms",
    "itl_ms_mean",
    "itl_ms_max",
    "e2el_ms",
    "prompt_tokens",
    "completion_tokens",
    "chunks",
    "decode_tok_s",
    "good",
    "error",
)


def rows(reports: Sequence[BenchReport]) -> list[dict[str, object]]:
    """The CSV rows: one per request (None stays empty)."""
    out: list[dict[str, object]] = []
    for report in reports:
        for r in report.requests:
            fields = r.model_dump()
            row: dict[str, object] = {"run": report.label}
            row.update({k: fields.get(k) for k in COLUMNS if k != "run"})
            row["ttft_ms"] = None if r.ttft_s is None else round(1000.0 * r.ttft_s, 3)
            out.append(row)
    return out


def text(reports: Sequence[BenchReport]) -> str:
    """`rows(reports)` as CSV text with a header line (fileio/write.py writes it: temporary file, rename)."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS))
    writer.writeheader()
    for row in rows(reports):
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()
