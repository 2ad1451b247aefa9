"""bench bounds acceptance figures as smoke does (smoke/attribution.py): impossible ones, or ones the streams'
tokens per chunk contradict, are a warning of the run (exit 1), never silently reported."""

from __future__ import annotations

import json

import pytest

from tests.bench.test_cli import ARGS, assert_clean_error
from tests.conftest import run_cli
from tests.smoke.scripted_server import Script, scripted_server


@pytest.mark.parametrize(
    ("override", "why"),
    [
        ((2, 50), "exceeds 1 + num_speculative_tokens"),  # length 26, rate 8.3 (the attack: 1,067 and 152)
        ((2, 5), "token(s) per chunk"),  # length 3.5 while every chunk held one token
    ],
)
def test_bench_marks_impossible_acceptance_and_exits_1(override: tuple[int, int], why: str) -> None:
    with scripted_server(Script(tokens_per_chunk=[1], spec_override=override, chunk_delay_s=0.0005)) as srv:
        result = run_cli("bench", "--endpoint", srv.url, *ARGS, "-o", "json")
    assert_clean_error(result, 1, "impossible spec-decode figures", why)
    assert any("impossible spec-decode figures" in w for w in json.loads(result.stdout)["warnings"])
