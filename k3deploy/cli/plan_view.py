"""Rich tables of a capacity plan: the figures, then the assumptions it cannot check here."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from k3deploy.profile.plan import GIB, CapacityPlan


def _gib(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:,.2f} GiB"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def figures_table(result: CapacityPlan) -> Table:
    """One row per figure, with the verdict last."""
    table = Table("FIGURE", "VALUE", box=None, title=f"capacity plan: {result.profile}")
    rows = [
        ("GPUs / tensor parallel", f"{result.gpus} / {result.tensor_parallel_size}"),
        ("HBM per GPU", _gib(result.hbm_bytes_per_gpu)),
        ("usable per GPU", _gib(result.usable_bytes_per_gpu)),
        ("weights per GPU", _gib(result.weight_bytes_per_gpu)),
        ("draft per GPU", _gib(result.draft_bytes_per_gpu)),
        ("runtime reserve per GPU", _gib(result.reserve_bytes_per_gpu)),
        (
            "KV per token per attention layer",
            f"{result.mla_bytes_per_token_per_layer:,} B ({result.kv_dtype_bytes} B/element, every TP rank)",
        ),
        ("KV per token (target / draft)", f"{result.kv_bytes_per_token:,} B / {result.draft_kv_bytes_per_token:,} B"),
        ("KV block", f"{result.kv_block_size:,} tokens = {result.mla_page_bytes:,} B per layer"),
    ]
    if result.linear_layer_slots:
        rows.append(
            (
                "KV cache groups",
                f"{result.kv_group_size} layers each: {result.attention_layer_slots} attention + "
                f"{result.linear_layer_slots} linear-attention slots (padding included)",
            )
        )
    if result.linear_page_bytes:
        rows += [
            (
                "linear-attention page per layer per GPU",
                f"{result.linear_recurrent_bytes_per_layer:,} B recurrent + {result.linear_conv_bytes_per_layer:,} B conv"
                f" = {result.linear_page_bytes:,} B, padded to {result.linear_page_padded_bytes:,} B",
            ),
            (
                "linear-attention state per sequence",
                f"{result.linear_state_bytes_per_sequence:,} B; per GPU {result.linear_pages_per_sequence} pages"
                f" x slots = {result.linear_state_bytes_per_sequence_per_gpu:,} B",
            ),
        ]
    rows += [
        ("one max_model_len sequence", f"{result.max_model_len:,} tokens = {_gib(result.bytes_per_full_sequence)}"),
        ("KV space", f"{_gib(result.kv_budget_bytes_per_gpu)} ({result.kv_space_source})"),
        ("KV tokens per GPU", _count(result.kv_tokens_per_gpu)),
        ("full-length sequences", _count(result.full_sequences_per_gpu)),
        ("verdict", ("FITS: " if result.fits else "FAIL: ") + result.reason),
    ]
    for figure, value in rows:
        table.add_row(figure, value)
    return table


def assumptions_table(result: CapacityPlan) -> Table:
    """The figures the plan takes on trust, each with its source and the --set field that changes it."""
    table = Table("ASSUMED (--set FIELD=...)", "VALUE", "FOR", "SOURCE", box=None, title="not checkable here")
    for item in result.assumptions:
        table.add_row(item.field, item.value, item.what, item.source)
    return table


def plan_table(result: CapacityPlan) -> Group:
    """The figures table followed by the assumptions table."""
    return Group(figures_table(result), assumptions_table(result))
