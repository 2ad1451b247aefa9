"""The canary's series of one bench run: names, the grouping key from the profile, which figure each carries, and
when the success stamp is pushed."""

from __future__ import annotations

import pytest

from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.observe import canary_series as series
from k3deploy.profile.load import load_profile
from k3deploy.report.bench import Dist, ServerDelta
from tests.bench.test_ab import _report

DIGEST = "sha256:" + "ab" * 32


def test_the_grouping_key_names_release_group_image_digest_and_draft_revision() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", [f"vllm.image=vllm/vllm-openai:v0.33.0@{DIGEST}"])
    key = series.grouping_key(profile, 1)
    assert list(key) == list(series.GROUPING_LABELS)
    assert key == {
        "release": "kimi-k3-gb300-tp16",
        "group": "1",
        "image_digest": DIGEST,
        "draft_revision": profile.speculative.revision or "unpinned",  # type: ignore[union-attr]
    }
    assert series.image_digest("vllm/vllm-openai:v0.33.0") == "unpinned"
    plain = load_profile("kimi-k3-gb300-tp16", ["speculative=null", "targets.min_acceptance_length=null"])
    assert series.grouping_key(plain, 0)["draft_revision"] == "none"


def _run(failed: int = 0, warnings: tuple[str, ...] = ()):  # a BenchReport
    report = _report("canary", {1: 321.0})
    overall = report.overall[0]
    overall.output_tok_s = 280.0
    overall.failed = failed
    overall.requests = 4
    overall.ttft_ms = Dist(count=1, median=450.0)
    cell = overall.model_copy(
        update={
            "category": "low_entropy",
            "server": ServerDelta(available=True, spec_decode=spec_decode_figures(10, 70, 37, {})),
        }
    )
    report.cells = [cell, cell.model_copy(update={"category": "mixed", "server": None})]
    report.warnings = list(warnings)
    return report


def test_a_successful_run_is_every_series_with_its_figure_and_the_success_stamp() -> None:
    got = {(s.name, s.labels): s.value for s in series.samples(_run(), 1_700_000_000.0)}
    assert got == {
        (series.REQUESTS, ()): 4.0,
        (series.FAILED, ()): 0.0,
        (series.DECODE, ()): 321.0,
        (series.OUTPUT, ()): 280.0,
        (series.TTFT, ()): 0.45,
        # 1 + 37 accepted / 10 drafts; the category without counters has no series.
        (series.ACCEPTANCE, (("category", "low_entropy"),)): pytest.approx(4.7),
        (series.LAST_SUCCESS, ()): 1_700_000_000.0,
    }
    assert all(name.startswith("k3deploy_canary_") and name in series.HELP for name, _ in got)


@pytest.mark.parametrize("run", [_run(warnings=("tokens differ",))])
def test_a_run_with_a_warning_pushes_no_success_stamp(run) -> None:  # BenchReport
    assert series.LAST_SUCCESS not in {s.name for s in series.samples(run, 1.0)}
    assert not series.succeeded(run)
