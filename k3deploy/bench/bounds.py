"""What a bench run may ask for, checked before it starts (a prompt is tokenized or a request sent). Pure.

- Lengths: a request's prompt and its output must fit the model's context, `vllm.max_model_len` (vLLM answers 400
  to one that does not, for every request of the run); `--dataset random` checks the longest prompt and output its
  range ratio can draw before tokenizing any (a 10-million-token prompt is gigabytes of tokenizer work).
- Rates: an open-loop cell offers its N requests over N / rate seconds (measure/arrivals.py rescales the last send
  to exactly that), which must fit `smoke.overall_timeout_s`, the bound one whole smoke run gets (`--request-rate
  1e-9` would otherwise sleep for 30 years); with `--duration D` the rate must offer at least one request in D and
  at most ARRIVALS_LIMIT.
"""

from __future__ import annotations

import math

from k3deploy.errors import UsageError
from k3deploy.measure.arrivals import ARRIVALS_LIMIT


def check_lengths(
    max_model_len: int, output_tokens: int, *, random_input_len: int | None = None, range_ratio: float = 0.0
) -> None:
    """UsageError when the longest request the flags describe cannot fit `max_model_len` tokens."""
    if random_input_len is None:
        if output_tokens >= max_model_len:
            raise UsageError(
                f"--output-tokens {output_tokens} leaves no room for a prompt in the model's context "
                f"(vllm.max_model_len {max_model_len})",
                hint=f"ask for fewer than {max_model_len} output tokens, or raise vllm.max_model_len with --set",
            )
        return
    ratio = min(max(range_ratio, 0.0), 1.0)
    longest_in = math.ceil(random_input_len * (1 + ratio))
    longest_out = math.ceil(output_tokens * (1 + ratio))
    if longest_in + longest_out > max_model_len:
        raise UsageError(
            f"--random-input-len {random_input_len} + --random-output-len {output_tokens}"
            + (f" (up to {longest_in} + {longest_out} with --random-range-ratio {range_ratio:g})" if ratio else "")
            + f" exceed the model's context, vllm.max_model_len {max_model_len}",
            hint="lower the lengths (vLLM's defaults are 1024 and 128), or raise vllm.max_model_len with --set",
        )


def check_rates(rates: list[float], requests_per_cell: int, duration_s: float | None, bound_s: float) -> None:
    """UsageError for a finite `--request-rate` whose cell cannot be offered within its bound (see above)."""
    for rate in rates:
        if math.isinf(rate):
            continue
        if duration_s is not None:
            expected = rate * duration_s
            if expected < 1:
                raise UsageError(
                    f"--request-rate {rate:g} offers {expected:.3g} requests in --duration {duration_s:g} s: none to measure",
                    hint=f"raise the rate to at least {1 / duration_s:.3g} req/s, or lengthen --duration",
                )
            if expected > ARRIVALS_LIMIT:
                raise UsageError(
                    f"--request-rate {rate:g} for --duration {duration_s:g} s is {expected:.3g} requests per cell, "
                    f"over the {ARRIVALS_LIMIT:,} a cell sends",
                    hint="lower the rate or the duration (inf sends the prompts all at once)",
                )
            continue
        span = requests_per_cell / rate
        if span > bound_s:
            raise UsageError(
                f"--request-rate {rate:g} offers a cell's {requests_per_cell} request(s) over {span:.3g} s, past "
                f"smoke.overall_timeout_s ({bound_s:g} s)",
                hint=f"raise the rate to at least {requests_per_cell / bound_s:.3g} req/s, send fewer prompts, "
                "or raise smoke.overall_timeout_s with --set",
            )
