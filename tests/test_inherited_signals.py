"""The suite does not depend on how it was started: with SIGINT ignored (a background job, nohup) the CLI's
interrupt handling and the tests that interrupt the processes they start still work (tests/conftest.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

from tests.conftest import REPO_ROOT


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_run_started_with_sigint_ignored_still_interrupts_a_cli_past_its_timeout() -> None:
    test = "tests/cli/test_in_process.py::test_a_run_past_its_timeout_is_interrupted_and_raises_as_subprocess_run_does"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", test],
        cwd=REPO_ROOT,
        preexec_fn=_ignore_sigint,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]


def test_children_of_such_a_run_get_the_default_sigint_again() -> None:
    probe = (
        "import signal, subprocess, sys\n"
        "assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import tests.conftest as c\n"
        "c.pytest_configure(None)\n"
        "child = 'import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)'\n"
        "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True).stdout.strip())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(REPO_ROOT)],
        preexec_fn=_ignore_sigint,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.stdout.strip() == "True", result.stderr
