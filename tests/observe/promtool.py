"""Prometheus's own rule checker and rule-unit-test runner (`promtool check rules`, `promtool test rules`) on the rule
groups k3deploy renders. `.ci/setup` links promtool into the venv (`.ci/prometheus`); without it a test fails under
CI=true and is skipped elsewhere.

A `Case` is one `promtool test rules` test: input series, then for each evaluation time the alerts that must be
firing (labels and the rendered annotations). Expected annotations are the rule's own templates with `$value` and
`$labels.x` filled in by the case, so a template that renders wrong fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import venv_tool


def tool(name: str) -> str:
    """Path of promtool or prometheus; fails under CI=true, skips elsewhere, when it is not installed."""
    found = venv_tool(name)
    if not found:
        message = f"{name} not installed (bash .ci/setup links it into the venv, from Debian's prometheus package)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def check_rules(groups: list[dict[str, Any]], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`promtool check rules` on the groups, written as a rule file."""
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    return subprocess.run(
        [tool("promtool"), "check", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


@dataclass(frozen=True)
class Fired:
    """An alert that must be firing: its labels beyond the rule's own, and `$value` as the templates print it."""

    labels: dict[str, str] = field(default_factory=dict)
    value: str = ""


@dataclass(frozen=True)
class Case:
    """One rule unit test: `series` maps a series (PromQL selector syntax) to promtool's expanding notation; `expect`
    maps an evaluation time (e.g. `20m`) to the alerts of `alert` firing then (an empty list: none)."""

    name: str
    alert: str
    series: dict[str, str]
    expect: dict[str, list[Fired]]
    interval: str = "1m"
    sets: tuple[str, ...] = ()


def cumulative(increments: list[float]) -> str:
    """A counter's samples, one per interval from 0, that grows by each increment in turn (promtool's values)."""
    total, values = 0.0, ["0"]
    for step in increments:
        total += step
        values.append(repr(total))
    return " ".join(values)


_VALUE = re.compile(r"\{\{ \$value[^}]*\}\}")
_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")


def _expanded(template: str, fired: Fired) -> str:
    return _LABEL.sub(lambda m: fired.labels[m.group(1)], _VALUE.sub(fired.value, template))


def _test_file(groups: list[dict[str, Any]], cases: list[Case]) -> dict[str, Any]:
    rules = {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}
    tests = []
    for case in cases:
        rule = rules[case.alert]
        alert_tests = [
            {
                "eval_time": at,
                "alertname": case.alert,
                "exp_alerts": [
                    {
                        "exp_labels": {**rule.get("labels", {}), **fired.labels},
                        "exp_annotations": {k: _expanded(v, fired) for k, v in rule.get("annotations", {}).items()},
                    }
                    for fired in firing
                ],
            }
            for at, firing in case.expect.items()
        ]
        tests.append(
            {
                "name": case.name,
                "interval": case.interval,
                "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
                "alert_rule_test": alert_tests,
            }
        )
    return {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}


def run_rule_tests(groups: list[dict[str, Any]], cases: list[Case], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of the cases against the groups; the output names every failed case. The cases' own
    `sets` are not applied here: pass the groups of the profile they were written for."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump(_test_file(groups, cases), sort_keys=False), encoding="utf-8")
    return subprocess.run(
        [tool("promtool"), "test", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )


# Labels of the built-in Kubernetes profile's series as the cluster's Prometheus holds them.
K3 = "kimi-k3-gb300-tp16"
NS = 'namespace="kimi-k3"'
#: The Prometheus Operator's target labels on the API Service's series (the leader of group 0).
SERVER = f'{NS},service="{K3}-api",pod="{K3}-0",job="{K3}-api",endpoint="http",model_name="kimi-k3",engine="0"'
#: kube-state-metrics' series.
KSM = f'{NS},job="kube-state-metrics"'
#: One GPU of the group in the DCGM exporter's series (its chart's label names).
GPU = f'exported_namespace="kimi-k3",exported_pod="{K3}-0-1",Hostname="gb300-node-2",gpu="3",UUID="GPU-0a1b"'
GPU_LABELS = {"Hostname": "gb300-node-2", "gpu": "3"}
