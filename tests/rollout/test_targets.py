"""`target_for` picks the target a profile names, importing only that target."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT, cli_env


def test_target_for_maps_each_profile_to_its_target_and_imports_only_it() -> None:
    code = (
        "import sys\n"
        "from k3deploy.profile import load_profile\n"
        "from k3deploy.targets import DeployOptions, target_for\n"
        "local = target_for(load_profile('local-cpu', []), DeployOptions())\n"
        "print(local.name, 'kubernetes' in sys.modules)\n"
        "kube = target_for(load_profile('kimi-k3-gb300-tp16', []), DeployOptions(dry_run=True))\n"
        "print(kube.name, kube.options.dry_run, 'kubernetes' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), cwd=REPO_ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    # Building a target connects to nothing: the kubernetes client is imported on the first API call only.
    assert result.stdout.splitlines() == ["local False", "kubernetes True False"]
