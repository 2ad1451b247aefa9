"""The scripted server honours vLLM 0.32's request contract, so a test passing against it means what it says.

Each rule as vLLM's OpenAI server applies it (see tests/smoke/scripted_server.py for the upstream files): a double
that answered every request the same way would let smoke drop `ignore_eos`, `stream_options` or the served name
from its requests and still pass.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from k3deploy.measure.request import request_body
from k3deploy.profile.load import load_profile
from tests.smoke.scripted_server import MODEL, Script, scripted_server


def _post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=10)


def _events(response: httpx.Response) -> list[Any]:
    return [
        line[len("data: ") :] if line == "data: [DONE]" else json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def _completion(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "prompt": "count to ten", "max_tokens": 20, **extra}


def test_a_model_it_does_not_serve_is_a_404_naming_it() -> None:
    with scripted_server() as srv:
        response = _post(srv.url, "/v1/completions", _completion(model="another-model", stream=True))
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "The model `another-model` does not exist."
        assert _post(srv.url, "/v1/completions", _completion(model=MODEL)).status_code == 200


def test_stream_false_is_one_json_body_with_usage() -> None:
    with scripted_server() as srv:
        response = _post(srv.url, "/v1/completions", _completion(stream=False, ignore_eos=True))
        assert response.headers["content-type"] == "application/json"
        answer = response.json()
        assert answer["usage"]["completion_tokens"] == 20
        assert answer["choices"][0]["finish_reason"] == "length"
        assert answer["choices"][0]["text"].split() == ["tok"] * 20
        chat = _post(srv.url, "/v1/chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
        assert chat.json()["choices"][0]["message"]["role"] == "assistant"


def test_stream_options_without_stream_is_a_400() -> None:
    with scripted_server() as srv:
        response = _post(srv.url, "/v1/completions", _completion(stream_options={"include_usage": True}))
        assert response.status_code == 400
        assert response.json()["error"]["param"] == "stream_options"


def test_usage_only_with_include_usage_and_per_chunk_only_with_continuous_stats_too() -> None:
    with scripted_server() as srv:
        bare = _events(_post(srv.url, "/v1/completions", _completion(stream=True, ignore_eos=True)))
        assert bare[-1] == "[DONE]"
        assert not any("usage" in e for e in bare[:-1])
        only_continuous = {"continuous_usage_stats": True}
        silent = _events(_post(srv.url, "/v1/completions", _completion(stream=True, stream_options=only_continuous)))
        assert not any("usage" in e for e in silent[:-1])
        final = _events(
            _post(srv.url, "/v1/completions", _completion(stream=True, stream_options={"include_usage": True}))
        )
        assert [("usage" in e) for e in final[:-1]] == [False] * (len(final) - 2) + [True]
        both = {"include_usage": True, "continuous_usage_stats": True}
        every = _events(_post(srv.url, "/v1/completions", _completion(stream=True, stream_options=both)))
        assert all("usage" in e for e in every[:-1])


def test_without_ignore_eos_the_answer_stops_at_the_eos_token_before_max_tokens() -> None:
    with scripted_server(Script(eos_after=7)) as srv:
        stopped = _post(srv.url, "/v1/completions", _completion()).json()
        assert stopped["usage"]["completion_tokens"] == 7
        assert stopped["choices"][0]["finish_reason"] == "stop"
        full = _post(srv.url, "/v1/completions", _completion(ignore_eos=True)).json()
        assert full["usage"]["completion_tokens"] == 20
        assert full["choices"][0]["finish_reason"] == "length"
        # An answer shorter than the end-of-sequence point is not cut.
        short = _post(srv.url, "/v1/completions", _completion(max_tokens=7)).json()
        assert (short["usage"]["completion_tokens"], short["choices"][0]["finish_reason"]) == (7, "length")


@pytest.mark.parametrize(("max_tokens", "status"), [(64, 200), (65, 400)])
def test_max_tokens_above_max_model_len_is_refused_at_the_limit(max_tokens: int, status: int) -> None:
    with scripted_server(Script(max_model_len=64)) as srv:
        response = _post(srv.url, "/v1/completions", _completion(prompt="x", max_tokens=max_tokens, ignore_eos=True))
        assert response.status_code == status
        if status == 200:  # clamped to what the one-token prompt leaves of the context
            assert response.json()["usage"]["completion_tokens"] == 63


@pytest.mark.parametrize(("words", "status"), [(64, 200), (65, 400)])
def test_a_prompt_longer_than_max_model_len_is_refused(words: int, status: int) -> None:
    with scripted_server(Script(max_model_len=64)) as srv:
        response = _post(srv.url, "/v1/completions", _completion(prompt="w " * words, max_tokens=8, ignore_eos=True))
        assert response.status_code == status
        if status == 400:
            assert "maximum context length is 64 tokens" in response.json()["error"]["message"]


def test_completions_default_to_16_tokens_as_vllm_does() -> None:
    with scripted_server() as srv:
        body = {"model": MODEL, "prompt": "hi", "ignore_eos": True}
        assert _post(srv.url, "/v1/completions", body).json()["usage"]["completion_tokens"] == 16


@pytest.mark.parametrize("ignore_eos", [True, False])
def test_smokes_measured_requests_need_ignore_eos_to_run_to_max_tokens(ignore_eos: bool) -> None:
    profile = load_profile("local-cpu", ["smoke.api=completions"])
    path, body = request_body(profile, "count to ten", 20, ignore_eos=ignore_eos)
    with scripted_server(Script(models=[profile.model.served_name])) as srv:
        events = _events(_post(srv.url, path, body))
    assert events[-1] == "[DONE]"
    assert events[-2]["usage"]["completion_tokens"] == (20 if ignore_eos else Script().eos_after)


def test_per_request_counts_ride_only_on_the_final_usage_chunk_or_the_whole_body() -> None:
    usage = {"include_usage": True, "continuous_usage_stats": True}
    with scripted_server(Script(tokens_per_chunk=[4], per_request_spec="detailed")) as srv:
        events = _events(
            _post(srv.url, "/v1/completions", _completion(stream=True, ignore_eos=True, stream_options=usage))
        )
        assert ["metrics" in e for e in events[:-1]] == [False] * (len(events) - 2) + [True]
        final = events[-2]
        assert final["choices"] == [] and final["usage"]["completion_tokens"] == 20
        # 20 tokens: the prefill's, then verify steps of 4, 4, 4, 4, 3.
        assert final["metrics"]["speculative_decoding"] == {
            "mean_acceptance_length": 1 + 14 / 5,
            "draft_acceptance_rate": 14 / 20,
            "acceptance_histogram": [0, 0, 1, 4, 0],
            "num_spec_steps": 5,
            "num_accepted_draft_tokens": 14,
            "num_draft_tokens": 20,
            "num_spec_tokens": 4,
            "per_step_accepted": [3, 3, 3, 3, 2],
            "per_step_drafted": [4, 4, 4, 4, 4],
        }
        without_usage = _events(_post(srv.url, "/v1/completions", _completion(stream=True, ignore_eos=True)))
        assert not any("metrics" in e for e in without_usage[:-1])
        two = _events(_post(srv.url, "/v1/completions", _completion(stream=True, n=2, stream_options=usage)))
        assert "usage" in two[-2] and "metrics" not in two[-2]
        whole = _post(srv.url, "/v1/completions", _completion(ignore_eos=True)).json()
        assert whole["metrics"]["time_to_first_token_ms"] is None
        assert whole["metrics"]["speculative_decoding"] == final["metrics"]["speculative_decoding"]
        # A request of one token has no verify step: its zero counts, and no per-step arrays even at `detailed`.
        one = _events(_post(srv.url, "/v1/completions", _completion(stream=True, max_tokens=1, stream_options=usage)))
        assert one[-2]["metrics"]["speculative_decoding"] == {
            "mean_acceptance_length": 1.0,
            "draft_acceptance_rate": 0.0,
            "acceptance_histogram": [0, 0, 0, 0, 0],
            "num_spec_steps": 0,
            "num_accepted_draft_tokens": 0,
            "num_draft_tokens": 0,
            "num_spec_tokens": 4,
        }


def test_per_request_counts_without_speculative_decoding_are_refused_as_vllm_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="requires speculative decoding"):
        Script(metrics="no_spec", per_request_spec="summary")
    with pytest.raises(ValueError, match="not none, summary or detailed"):
        Script(per_request_spec="full")
