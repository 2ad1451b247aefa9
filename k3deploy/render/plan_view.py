"""Rich table of a capacity plan."""

from __future__ import annotations

from rich.table import Table

from k3deploy.render.plan import GIB, CapacityPlan


def _gib(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:,.2f} GiB"


def plan_table(result: CapacityPlan) -> Table:
    """One row per figure, with the verdict last."""
    table = Table("FIGURE", "VALUE", box=None, title=f"capacity plan: {result.profile}")
    rows = [
        ("GPUs / tensor parallel", f"{result.gpus} / {result.tensor_parallel_size}"),
        ("HBM per GPU", _gib(result.hbm_bytes_per_gpu)),
        ("usable per GPU", _gib(result.usable_bytes_per_gpu)),
        ("weights per GPU", _gib(result.weight_bytes_per_gpu)),
        ("draft per GPU", _gib(result.draft_bytes_per_gpu)),
        ("runtime reserve per GPU", _gib(result.reserve_bytes_per_gpu)),
        ("KV cache per token", f"{result.kv_bytes_per_token:,} B ({result.kv_dtype_bytes} B/element)"),
        ("linear-attention state per sequence", f"{result.linear_state_bytes_per_sequence:,} B"),
        ("  of which per GPU", f"{result.linear_state_bytes_per_sequence_per_gpu:,} B"),
        ("one max_model_len sequence", f"{result.max_model_len:,} tokens = {_gib(result.bytes_per_full_sequence)}"),
        ("KV budget per GPU", _gib(result.kv_budget_bytes_per_gpu)),
        ("KV tokens per GPU", "-" if result.kv_tokens_per_gpu is None else f"{result.kv_tokens_per_gpu:,}"),
        ("full-length sequences", "-" if result.full_sequences_per_gpu is None else str(result.full_sequences_per_gpu)),
        ("verdict", ("FITS: " if result.fits else "FAIL: ") + result.reason),
    ]
    for figure, value in rows:
        table.add_row(figure, value)
    return table
