"""`k3deploy completion bash|zsh|fish` prints a script the shell completes with, and `-h` is `--help`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import REPO_ROOT, cli_env, run_cli


def test_dash_h_is_help() -> None:
    short, long = run_cli("status", "-h"), run_cli("status", "--help")
    assert short.returncode == 0 and short.stdout == long.stdout and "--exit-code" in short.stdout
    assert run_cli("-h").stdout == run_cli("--help").stdout


def test_each_shell_gets_its_script_and_another_is_refused() -> None:
    assert "complete -o default -F _k3deploy_completion k3deploy" in run_cli("completion", "bash").stdout
    assert run_cli("completion", "zsh").stdout.startswith("#compdef k3deploy")
    assert "complete --command k3deploy" in run_cli("completion", "fish").stdout
    other = run_cli("completion", "tcsh")
    assert other.returncode == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in other.stderr


def test_bash_completes_commands_and_flags_through_the_printed_script(tmp_path: os.PathLike[str]) -> None:
    """Real bash sources the script and runs its completion function, which calls k3deploy back."""
    bash = shutil.which("bash")
    assert bash is not None, "bash is needed to test the bash completion script"
    shim = os.path.join(tmp_path, "k3deploy")
    with open(shim, "w") as f:
        f.write(f'#!/bin/sh\nexec "{sys.executable}" -m k3deploy "$@"\n')
    os.chmod(shim, 0o755)
    script = (
        "source <(k3deploy completion bash)\n"
        'COMP_WORDS=(k3deploy stat); COMP_CWORD=1; _k3deploy_completion k3deploy; echo "${COMPREPLY[*]}"\n'
        'COMP_WORDS=(k3deploy down --pu); COMP_CWORD=2; _k3deploy_completion k3deploy; echo "${COMPREPLY[*]}"\n'
    )
    env = {**cli_env(), "PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [bash, "-c", script], capture_output=True, text=True, timeout=60, env=env, cwd=REPO_ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["status", "--purge"]
