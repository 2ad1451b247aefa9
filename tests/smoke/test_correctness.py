"""Correctness probes judge answers mechanically; fluent nonsense fails."""

from __future__ import annotations

import pytest

from k3deploy.measure.request import REASONING_OFF, request_body
from k3deploy.profile import load_profile
from k3deploy.smoke.correctness import PROBES, expect_copy, expect_json, expect_number, judge_answer

RIGHT = {
    "arithmetic-multiply": "10063",
    "arithmetic-sum": "The sum is 15,924.",
    "copy-string": "QX7-PLUM-4821-ZETA",
    "json-object": 'Here it is: {"city": "Lyon", "year": 1998, "ok": true}',
}


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
def test_right_answers_pass_and_nonsense_fails(probe) -> None:
    assert judge_answer(probe, RIGHT[probe.id])[0] is True
    assert judge_answer(probe, "The quarterly harmonics of the river suggest a gentle morning.")[0] is False
    assert judge_answer(probe, "   ") == (False, "empty answer")


def test_the_probe_answers_are_right() -> None:
    assert 347 * 29 == 10063 and 1234 + 5678 + 9012 == 15924


def test_judges_explain() -> None:
    assert expect_number(12)("<think>maybe 11</think> 13") == (False, "answered 13, expected 12")
    assert expect_number(12)("no digits") == (False, "no number in the answer (expected 12)")
    assert expect_copy("AB-1")("ab-1") == (False, "did not find 'AB-1' in the answer")
    assert expect_json({"a": 1})('{"a": 2}') == (False, "wrong or missing keys: {'a': 2}")
    assert expect_json({"a": 1})("{'a': 1}")[1].startswith("the JSON object does not parse")
    assert expect_json({"a": 1})("none") == (False, "no JSON object in the answer")


def test_probes_ask_with_reasoning_off_and_measured_requests_do_not() -> None:
    profile = load_profile("kimi-k3-gb300-tp16")
    path, probe = request_body(profile, "2+2?", 64, ignore_eos=False, reasoning_off=True)
    assert path == "/v1/chat/completions"
    assert probe["reasoning_effort"] == "none" and probe["chat_template_kwargs"] == {"thinking": False}
    assert REASONING_OFF.items() <= probe.items()
    _, measured = request_body(profile, "2+2?", 64, ignore_eos=True)
    assert "reasoning_effort" not in measured and "chat_template_kwargs" not in measured
