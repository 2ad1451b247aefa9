"""`up --group-endpoint` templates are checked before anything is applied (exit 2, one error and one hint line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.rollout.groups import check_group_template, group_endpoint
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("http://{nope}:8000", "names {nope}"),
        ("http://{pod.__class__}:8000", "names {pod.__class__}"),
        ("http://{pod:8000", "is not a valid template"),
        ("http://{0}:8000", "names {0}"),
        ("{pod}:8000", "is not an http(s) URL"),
        ("http://{pod}:99999", "is not a valid URL"),
        # A width spec alone builds a string of any size ({group:>999999999}: 1 GB) before any check.
        ("http://{pod:>99}:8000", "has a format spec"),
        ("http://kimi-{group:03d}:8000", "{group:03d} has a format spec"),
        ("http://{pod!r}:8000", "conversion"),
        ("http://{pod:{group}}:8000", "has a format spec"),
    ],
)
def test_a_bad_template_is_refused_before_any_cluster_call(tmp_path: Path, template: str, why: str) -> None:
    missing = tmp_path / "no-such-kubeconfig"  # a cluster call would fail on it with exit 3, not 2
    done = run_cli("up", "-p", "kimi-k3-gb300-tp16", "--kubeconfig", str(missing), "--group-endpoint", template)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: --group-endpoint ") and why in lines[0], done.stderr
    assert lines[1].startswith("hint: ") and "Traceback" not in done.stderr


def test_a_good_template_fills_in_every_field() -> None:
    template = check_group_template("http://{pod}.{lws}.{namespace}.svc:8000/g{group}")
    assert group_endpoint(template, "kimi", "ml", 1, 8000) == "http://kimi-1.kimi.ml.svc:8000/g1"
