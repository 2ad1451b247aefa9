"""Fixtures every test tier shares: the repo root and running the real CLI, in this process or in a subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tests.pin.fixtures", "tests.realk8s.fixtures"]

REPO_ROOT = Path(__file__).resolve().parent.parent
#: The settings the committed example set (manifests/) is rendered with: the built-in GB300 profile marked
#: non-production, since `render` refuses a production profile's floating versions until `k3deploy pin` pins them.
EXAMPLE_SETS = ("--set", "production=false")
#: Tests never reach a public registry: one a test does not start itself is a closed port on 127.0.0.1
#: (preflight then reports the image platforms as unknown, a WARN).
os.environ.setdefault("K3DEPLOY_REGISTRY_URL", "http://127.0.0.1:9")

#: `run_cli` / `run_cli_process`: (*args, env=, timeout=, cwd=, input=) -> args, returncode, stdout, stderr.
CliCall = Callable[..., "subprocess.CompletedProcess[str]"]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C semantics whatever the tests were started from: a shell runs a background job (`cmd &`, nohup) with
    SIGINT ignored, and Python then keeps it ignored, so the run_cli watchdog's SIGINT and the SIGINT tests send to
    the processes they start (which inherit an ignored signal through exec) would be lost. A handled signal is reset
    to the default on exec, so the children get Python's own Ctrl-C handling too."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def venv_tool(name: str) -> str | None:
    """A command-line tool installed beside this interpreter (the venv's bin), else the one on PATH; None if neither."""
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


def _cli_overrides(extra: dict[str, str] | None) -> dict[str, str]:
    """What a CLI run changes in the environment: this checkout first on the path, no colour, a wide terminal."""
    pythonpath = os.environ.get("PYTHONPATH")
    overrides = {
        "PYTHONPATH": str(REPO_ROOT) + (os.pathsep + pythonpath if pythonpath else ""),
        "NO_COLOR": os.environ.get("NO_COLOR", "1"),
        "COLUMNS": "200",
    }
    overrides.update(extra or {})
    return overrides


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a k3deploy subprocess: this checkout first on the path, no colour, a wide terminal."""
    return {**os.environ, **_cli_overrides(extra)}


def run_cli_process(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m k3deploy ARGS` in a new process, as a user would; never raises on the exit code.

    For what only a real process shows: the entry point, signals, imports at start-up, the interpreter's exit.
    """
    return subprocess.run(
        [sys.executable, "-m", "k3deploy", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(env),
        cwd=cwd or REPO_ROOT,
        input=input,
    )


def _exit_code(exc: SystemExit) -> tuple[int, str]:
    """The exit status and stderr text the interpreter would give for `exc` (sys.exit(None | int | message))."""
    if exc.code is None:
        return 0, ""
    if isinstance(exc.code, int):
        return exc.code, ""
    return 1, f"{exc.code}\n"


class _ThisThread:
    """sys.stdout / sys.stderr during an in-process run: what the calling thread writes goes to the run's buffer,
    what any other thread writes (a test server's handler printing a dropped connection, a thread a previous test
    left running) to the stream it went to before, as it would from another process.
    """

    def __init__(self, captured: Any, elsewhere: Any) -> None:
        self._captured = captured
        self._elsewhere = elsewhere
        self._thread = threading.get_ident()

    def _target(self) -> Any:
        return self._captured if threading.get_ident() == self._thread else self._elsewhere

    def write(self, text: str) -> int:
        """Write to the calling thread's buffer or, from another thread, where it wrote before."""
        return int(self._target().write(text))

    def flush(self) -> None:
        """Flush the stream this thread writes to."""
        self._target().flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, ...
        return getattr(self._target(), name)


class _Watchdog:
    """Sends SIGINT to the calling (main) thread once `seconds` pass inside the `with` block, never after it."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._lock = threading.Lock()
        self._done = False
        self._target = threading.get_ident()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                signal.pthread_kill(self._target, signal.SIGINT)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `k3deploy ARGS` in this process through its entry point `k3deploy.cli.main`, the one `python -m k3deploy`
    calls, so the error boundary (`error:`/`hint:`, exit codes) is the same; never raises on the exit code.

    typer's `CliRunner.isolation` (as hatch's tests/conftest.py uses click's) swaps stdin/stdout/stderr for buffers
    and applies `env` to os.environ for the call only; the working directory is `cwd` (default: the repo root).
    Only this thread's output is captured (see `_ThisThread`). What the entry point changes for the process (the
    SIGTERM handler, the unraisable hook), the consoles' terminal settings and tempfile's cached folder are put back afterwards. Past
    `timeout` seconds the run gets SIGINT, as on Ctrl-C (so its cleanup runs), and TimeoutExpired is raised, as
    `subprocess.run` does.
    """
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers (the entry point's SIGTERM, the watchdog's SIGINT) can only be set from the main thread;
        # a test that runs the CLI beside its own checks (a thread watching the cluster) gets a process of its own.
        return run_cli_process(*args, env=env, timeout=timeout, cwd=cwd, input=input)
    from typer._click import formatting
    from typer.testing import CliRunner as TyperCliRunner

    import k3deploy.cli as entry
    from k3deploy import console

    before = sys.stdout, sys.stderr
    sigterm, unraisable = signal.getsignal(signal.SIGTERM), sys.unraisablehook
    consoles = [(c, c._width, c._color_system) for c in (console.err, console.out)]
    here, temp = os.getcwd(), tempfile.tempdir
    code, extra_err = 0, ""
    watchdog = _Watchdog(timeout)
    with TyperCliRunner().isolation(input=input, env=_cli_overrides(env)) as (out, err, _):
        sys.stdout, sys.stderr = _ThisThread(sys.stdout, before[0]), _ThisThread(sys.stderr, before[1])
        formatting.FORCED_WIDTH = None  # help is as wide as the terminal (COLUMNS), as in a process of its own
        for c, _width, _colours in consoles:
            # As a console created with stdout/stderr a pipe and COLUMNS in the environment would be.
            c._width, c._color_system = None, None
        tempfile.tempdir = None  # found again from TMPDIR, as a new process would
        os.chdir(cwd or REPO_ROOT)
        try:
            with watchdog:
                entry.main(list(args))
        except SystemExit as exc:
            code, extra_err = _exit_code(exc)
        except KeyboardInterrupt:
            if not watchdog.fired:
                raise
            code = 130
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.chdir(here)
            tempfile.tempdir = temp
            signal.signal(signal.SIGTERM, sigterm)
            sys.unraisablehook = unraisable
            entry._TERMINATED.clear()
            for c, width, colours in consoles:
                c._width, c._color_system = width, colours
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace") + extra_err
    if watchdog.fired:
        raise subprocess.TimeoutExpired(["k3deploy", *args], timeout, stdout, stderr)
    return subprocess.CompletedProcess(["k3deploy", *args], code, stdout, stderr)


@pytest.fixture
def cli() -> CliCall:
    """`cli("render", "-p", NAME)`: the CLI run in this process (see `run_cli`)."""
    return run_cli


@pytest.fixture
def cli_process() -> CliCall:
    """`cli_process("render", ...)`: the CLI as a subprocess (see `run_cli_process`)."""
    return run_cli_process
