"""Smoke reads the served model's max_model_len from /v1/models before sending: requests that cannot fit are
capped with a WARN naming the profile fields, or, with no room at all, nothing is sent and one FAIL says why."""

from __future__ import annotations

import pytest

from k3deploy.report.model import Status
from k3deploy.smoke.context import CONTEXT, MIN_OUTPUT, fit_context
from k3deploy.smoke.runner import exit_code
from tests.smoke.scripted_server import Script, scripted_server
from tests.smoke.test_faults import smoke


def test_budgets_that_fit_are_left_alone_and_an_unknown_context_too() -> None:
    assert fit_context(4096, 256, 64, 800).check is None
    unknown = fit_context(None, 100_000, 64, 800)
    assert (unknown.output_tokens, unknown.check) == (100_000, None)


@pytest.mark.parametrize(("output", "correctness", "capped"), [(4000, 64, "output_tokens"), (100, 900, "correctness")])
def test_a_budget_past_the_context_is_capped_with_a_warn_naming_the_fields(
    output: int, correctness: int, capped: str
) -> None:
    fit = fit_context(1000, output, correctness, 761)
    assert (fit.output_tokens, fit.correctness_max_tokens) == (min(output, 239), min(correctness, 239))
    assert fit.check is not None and fit.check.status is Status.WARN and not fit.blocks
    assert f"max_model_len is 1000 tokens; capped smoke.{capped}" in fit.check.detail
    assert "smoke.output_tokens and smoke.correctness_max_tokens to at most 239" in (fit.check.hint or "")


def test_no_room_at_all_blocks_the_run() -> None:
    fit = fit_context(761 + MIN_OUTPUT - 1, 256, 64, 761)
    assert fit.blocks and fit.check is not None and "nothing was sent" in fit.check.detail


def test_smoke_caps_to_the_served_context_and_passes_with_a_warn() -> None:
    with scripted_server(Script(max_model_len=1000)) as srv:
        report = smoke(srv.url, "smoke.output_tokens=700")
        served = srv.counters.requests
    check = next(c for c in report.checks if c.name == CONTEXT)
    assert check.status is Status.WARN and "capped smoke.output_tokens 700 to 588" in check.detail
    measured = [r for r in report.requests if r.phase == "measured"]
    assert measured and all(r.ok and r.max_tokens == 588 for r in measured), [r.error for r in measured]
    assert exit_code(report) == 0 and served > 0


def test_smoke_against_a_context_too_short_sends_nothing_and_fails_in_one_line() -> None:
    with scripted_server(Script(max_model_len=420)) as srv:
        report = smoke(srv.url)
        served = srv.counters.requests
    check = next(c for c in report.checks if c.name == CONTEXT)
    assert check.status is Status.FAIL and len(check.detail) < 300
    assert served == 0 and report.requests == []
    assert {c.name: c.status for c in report.checks if c.status is Status.SKIP}
    assert exit_code(report) == 1
