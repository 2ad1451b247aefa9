"""The figures' PromQL evaluated by Prometheus's own engine (`promtool test rules`, promql_expr_test) on vLLM series
that grow at known rates: each figure must come out as its definition says, computed here from those rates.

A formula that parses but is wrong (mean acceptance length as accepted / draft tokens, a rate summed per pod
instead of over the group, a series of another namespace let in) gives another number and fails, with no golden
file involved.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from k3deploy.observe import promql
from k3deploy.observe.promql import Scope
from tests.observe.promtool import tool

WINDOW = "5m"
#: Two engines of the group, the per-minute increments of their counters and their gauges. Chosen so every figure
#: is an exact binary fraction (promtool compares the values it evaluates).
PER_MINUTE = {
    promql.GENERATION_TOKENS: (600, 1200),
    promql.SPEC_DRAFTS: (60, 120),
    promql.SPEC_DRAFT_TOKENS: (240, 480),
    promql.SPEC_ACCEPTED: (90, 180),
    promql.TPOT + "_count": (60, 60),
    promql.TPOT + "_sum": (3.75, 3.75),
    promql.TTFT + "_count": (60, 60),
    promql.TTFT + "_sum": (7.5, 7.5),
    promql.PREFIX_CACHE_HITS: (15, 15),
    promql.PREFIX_CACHE_QUERIES: (60, 60),
}
PER_POSITION_PER_MINUTE = {"0": (45, 90), "1": (30, 60), "2": (15, 30)}
GAUGES = {promql.KV_CACHE_USAGE: (0.25, 0.5), promql.RUNNING: (3, 4), promql.WAITING: (1, 2)}


def _rate(name: str) -> float:
    """The group's rate per second of a counter: both engines' increments per minute, summed, over 60 s."""
    return sum(PER_MINUTE[name]) / 60


def expected() -> dict[str, float | dict[str, float]]:
    """Each figure by its definition (vLLM's metrics docs; k3deploy/observe/promql.py's docstrings)."""
    drafts = _rate(promql.SPEC_DRAFTS)
    return {
        "output_tok_s": _rate(promql.GENERATION_TOKENS),
        "decode_tok_s": _rate(promql.TPOT + "_count") / _rate(promql.TPOT + "_sum"),
        "ttft_s": _rate(promql.TTFT + "_sum") / _rate(promql.TTFT + "_count"),
        "running": float(sum(GAUGES[promql.RUNNING])),
        "waiting": float(sum(GAUGES[promql.WAITING])),
        "kv_cache_usage": max(GAUGES[promql.KV_CACHE_USAGE]),
        "prefix_cache_hit_rate": _rate(promql.PREFIX_CACHE_HITS) / _rate(promql.PREFIX_CACHE_QUERIES),
        "acceptance_rate": _rate(promql.SPEC_ACCEPTED) / _rate(promql.SPEC_DRAFT_TOKENS),
        "mean_acceptance_length": 1 + _rate(promql.SPEC_ACCEPTED) / drafts,
        "per_position_acceptance": {p: sum(v) / 60 / drafts for p, v in PER_POSITION_PER_MINUTE.items()},
    }


def _series(labels: list[str], decoy: str | None) -> list[dict[str, str]]:
    """promtool input series: both engines' (and, when given, a decoy engine's outside the scope, 100x busier)."""
    out = []
    engines = [(labels[0], 0, 1), (labels[1], 1, 1)] + ([(decoy, 0, 100)] if decoy else [])
    for label, i, scale in engines:
        for name, increments in PER_MINUTE.items():
            out.append({"series": f"{name}{{{label}}}", "values": f"0+{increments[i] * scale}x30"})
        for position, increments in PER_POSITION_PER_MINUTE.items():
            series = f'{promql.SPEC_ACCEPTED_PER_POS}{{{label},position="{position}"}}'
            out.append({"series": series, "values": f"0+{increments[i] * scale}x30"})
        for name, values in GAUGES.items():
            out.append({"series": f"{name}{{{label}}}", "values": f"{values[i] * scale}x30"})
    return out


SCOPED = Scope(namespace="kimi-k3", service="k-api", pod_prefix="k")
CASES = {
    "unscoped": (Scope(), ['pod="a",engine="0"', 'pod="b",engine="0"'], None),
    "scoped": (
        SCOPED,
        ['namespace="kimi-k3",service="k-api",pod="k-0"', 'namespace="kimi-k3",service="k-api",pod="k-1"'],
        'namespace="other",service="k-api",pod="x-0"',
    ),
}


def _expr_tests(scope: Scope, figures: dict[str, float | dict[str, float]]) -> list[dict[str, object]]:
    exprs = promql.expressions(scope, WINDOW)
    tests: list[dict[str, object]] = []
    for key, value in figures.items():
        samples = (
            [{"labels": f'{{position="{p}"}}', "value": v} for p, v in value.items()]
            if isinstance(value, dict)
            else [{"labels": "{}", "value": value}]
        )
        tests.append({"expr": exprs[key], "eval_time": "20m", "exp_samples": samples})
    return tests


def _promtool(tmp_path: Path, case: str, figures: dict[str, float | dict[str, float]]) -> str:
    scope, labels, decoy = CASES[case]
    (tmp_path / "rules.yaml").write_text("groups: []\n", encoding="utf-8")
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": case,
                "interval": "1m",
                "input_series": _series(labels, decoy),
                "promql_expr_test": _expr_tests(scope, figures),
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(test, sort_keys=False), encoding="utf-8")
    result = subprocess.run(
        [tool("promtool"), "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return "" if result.returncode == 0 else result.stdout + result.stderr


@pytest.mark.parametrize("case", list(CASES))
def test_every_figure_evaluates_to_its_definition(tmp_path: Path, case: str) -> None:
    figures = expected()
    assert figures["mean_acceptance_length"] == 2.5 and figures["acceptance_rate"] == 0.375  # the inputs, not zero
    assert set(figures) <= set(promql.expressions(Scope(), WINDOW))
    assert _promtool(tmp_path, case, figures) == ""


def test_a_wrong_but_parseable_formula_gives_another_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The check above is only worth something if a wrong formula fails it: mean acceptance length computed as
    # 1 + accepted / draft tokens (a parseable PromQL expression over the same series).
    def wrong(scope: Scope, window: str = WINDOW) -> str:
        sel = scope.server()
        return f"1 + sum(rate({promql.SPEC_ACCEPTED}{sel}[{window}])) / sum(rate({promql.SPEC_DRAFT_TOKENS}{sel}[{window}]))"

    figures = {"mean_acceptance_length": expected()["mean_acceptance_length"]}
    monkeypatch.setattr(
        promql,
        "FIGURES",
        tuple(
            f if f.key != "mean_acceptance_length" else type(f)(f.key, f.title, f.unit, wrong) for f in promql.FIGURES
        ),
    )
    failure = _promtool(tmp_path, "unscoped", figures)
    assert "1.375" in failure, failure  # 1 + 4.5 / 12: what the wrong formula evaluates to, where 2.5 was expected
