"""Whether smoke's requests fit the served model's context, read from `/v1/models` before any is sent. Pure.

vLLM lists `max_model_len` with each model (vllm/entrypoints/openai/protocol.py, ModelCard) and answers 400 to a
request whose `max_tokens` passes it (serve/utils/api_utils.py `get_max_tokens`; one whose prompt and output pass
it is cut short, which a measured request that must run to its length counts as a failure). A profile smoked
against a smaller model than it describes (the GB300 profile against a test server) would fail every request with
the server's long error text. Instead, before sending: each request's output is capped to what the context leaves
after the longest prompt smoke sends, with a WARN naming the profile fields, or, when not even MIN_OUTPUT tokens
are left, the run stops with one FAIL line.
"""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.report.model import CheckResult, Status

CONTEXT = "served context"
#: Fewer output tokens than this measure no decode rate worth reporting.
MIN_OUTPUT = 16
#: Tokens a chat template adds around a prompt (role markers, BOS, the generation prompt), generously.
TEMPLATE_TOKENS = 64


#: UTF-8 bytes per token assumed for smoke's prompts: byte-level BPE vocabularies average about 4 on English text;
#: 2 leaves twice that margin. One byte per token (the strict bound) capped a 1,024-token rehearsal model's 384
#: output tokens to 263 though its longest prompt is under 200 tokens; the server itself refuses only a max_tokens
#: above max_model_len, and the margin keeps a measured request from being cut short.
BYTES_PER_TOKEN = 2


def prompt_allowance(prompts: list[str]) -> int:
    """An estimate, with margin, of the tokens of the longest prompt (its UTF-8 bytes over BYTES_PER_TOKEN) plus
    the chat template's."""
    return max((len(p.encode("utf-8")) for p in prompts), default=0) // BYTES_PER_TOKEN + TEMPLATE_TOKENS


@dataclass(frozen=True)
class ContextFit:
    """The output budgets smoke sends with, and the check that says what was capped (None: nothing to say)."""

    output_tokens: int
    correctness_max_tokens: int
    check: CheckResult | None = None

    @property
    def blocks(self) -> bool:
        """True when nothing can be measured in the served context."""
        return self.check is not None and self.check.status is Status.FAIL


def fit_context(served_max: int | None, output_tokens: int, correctness_max_tokens: int, allowance: int) -> ContextFit:
    """The budgets that fit `served_max` (the served model's max_model_len; None when the server does not say)."""
    if served_max is None or (
        output_tokens <= served_max - allowance and correctness_max_tokens <= served_max - allowance
    ):
        return ContextFit(output_tokens, correctness_max_tokens)
    room = served_max - allowance
    if room < MIN_OUTPUT:
        return ContextFit(
            output_tokens,
            correctness_max_tokens,
            CheckResult(
                name=CONTEXT,
                status=Status.FAIL,
                measured=served_max,
                target=f">= {allowance + MIN_OUTPUT}",
                detail=f"the served model's max_model_len is {served_max} tokens: no room for smoke's prompts "
                f"(up to {allowance} tokens) and {MIN_OUTPUT} output tokens; nothing was sent",
                hint="smoke the model this profile serves (model.served_name, vllm.max_model_len), or a profile "
                "that describes the server you point at",
            ),
        )
    capped = [
        f"smoke.{name} {value} to {room}"
        for name, value in (("output_tokens", output_tokens), ("correctness_max_tokens", correctness_max_tokens))
        if value > room
    ]
    return ContextFit(
        min(output_tokens, room),
        min(correctness_max_tokens, room),
        CheckResult(
            name=CONTEXT,
            status=Status.WARN,
            measured=served_max,
            target=f">= {allowance + max(output_tokens, correctness_max_tokens)}",
            detail=f"the served model's max_model_len is {served_max} tokens; capped " + " and ".join(capped),
            hint=f"set smoke.output_tokens and smoke.correctness_max_tokens to at most {room} (and "
            f"vllm.max_model_len to {served_max}) to smoke this server as the profile asks",
        ),
    )
