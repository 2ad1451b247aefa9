"""The committed Flux Kustomization waits as long as a first sync can take: the weight download, then the load."""

from __future__ import annotations

import yaml

from k3deploy.duration import parse_duration
from k3deploy.profile import load_profile
from tests.conftest import REPO_ROOT


def test_flux_timeout_covers_the_prefetch_and_the_startup_budget() -> None:
    flux = yaml.safe_load((REPO_ROOT / "gitops" / "flux" / "kustomization.yaml").read_text())
    kube = load_profile("kimi-k3-gb300-tp16").kubernetes
    assert parse_duration(flux["spec"]["timeout"]) >= kube.prefetch_timeout_s + kube.startup_probe_budget_s
