"""Acceptance the stream contradicts: counters claiming a length well above 1 while every request received about
one token per chunk are a FAIL in smoke and a warning of the run (exit 1) in bench."""

from __future__ import annotations

import pytest

from k3deploy.measure.attribution import stream_contradicts
from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.report.model import Status
from k3deploy.report.smoke import MetricsDelta
from k3deploy.smoke.verdict import SPECULATIVE, judge_speculative
from tests.smoke.scripted_server import Script, scripted_server
from tests.smoke.test_faults import smoke
from tests.smoke.test_verdict import _rec, _summary


def _delta(drafts: float, accepted: float, generation: float) -> MetricsDelta:
    figures = spec_decode_figures(drafts, drafts * 7, accepted, {0: accepted})
    return MetricsDelta(available=True, window_s=1.0, generation_tokens=generation, spec_decode=figures)


def test_length_five_at_one_token_per_chunk_fails_though_the_token_totals_agree() -> None:
    """The attack: 64 tokens streamed one per chunk, the counters agree on 64 tokens and claim 12 drafts with 48
    accepted (length 5.0, and 12 + 48 <= 64: within every counting bound)."""
    summary = _summary(*(_rec(i, 10.0, chunk=1.0) for i in range(4)))
    check = judge_speculative(True, 2.0, _delta(12, 48, 256), summary, client_tokens=256, num_speculative_tokens=7)
    assert check.status is Status.FAIL and check.measured == 5.0
    assert check.detail.startswith("acceptance the stream contradicts: the counters claim a mean acceptance length")
    assert "1.000 token(s) per chunk" in check.detail


@pytest.mark.parametrize(
    ("length", "mean", "p90", "contradicted"),
    [
        (5.0, 1.0, 1.0, True),
        (1.5, 1.05, None, True),
        (1.49, 1.0, 1.0, False),  # not well above 1: a draft accepted now and then
        (5.0, 1.06, 1.06, False),  # several tokens in some chunks
        (5.0, 1.0, 2.5, False),  # per-request figures: some requests did get multi-token chunks
        (5.0, None, None, False),  # no per-chunk usage: the stream says nothing
    ],
)
def test_the_bounds_of_a_contradiction(
    length: float, mean: float | None, p90: float | None, contradicted: bool
) -> None:
    assert (stream_contradicts(length, mean, p90) is not None) is contradicted


def test_a_stream_that_agrees_still_passes() -> None:
    summary = _summary(*(_rec(i, 10.0, chunk=5.0) for i in range(4)))
    check = judge_speculative(True, 2.0, _delta(12, 48, 256), summary, client_tokens=256, num_speculative_tokens=7)
    assert check.status is Status.PASS


def test_smoke_against_a_server_whose_counters_are_rewritten() -> None:
    """The scripted server streams one token per chunk while its counters claim 2 drafts and 5 accepted tokens per
    request (length 3.5 within local-cpu's 1 + 3, 7 rounds and tokens of 20 streamed)."""
    with scripted_server(Script(tokens_per_chunk=[1], spec_override=(2, 5))) as srv:
        report = smoke(srv.url)
    spec = next(c for c in report.checks if c.name == SPECULATIVE)
    assert spec.status is Status.FAIL, spec
    assert "acceptance the stream contradicts" in spec.detail
