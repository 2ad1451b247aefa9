"""The `k3deploy` command: a thin typer app; each command parses, loads the profile, calls its stage, exits.

Command modules register themselves on `app`; none imports `kubernetes` at import time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import typer

from k3deploy.cli.app import app, app_for
from k3deploy.console import print_error
from k3deploy.errors import EXIT_ENVIRONMENT, EXIT_USAGE, K3DeployError

#: How long a dropped interrupt waits before it is sent again: the callback that dropped it has returned by then.
_REDELIVER_AFTER_S = 0.05
#: What a shell reports for a process that SIGPIPE ended (128 + 13), as `yes | head -1` does.
EXIT_BROKEN_PIPE = 141

# Registration by import: each module adds its commands to `app`.
from k3deploy.cli import completion as _completion  # noqa: E402
from k3deploy.cli import render as _render  # noqa: E402,F401

_OPTIONAL_COMMAND_MODULES = ("smoke", "preflight", "rollout", "pin", "bench", "watch", "stage", "guard")
for _name in _OPTIONAL_COMMAND_MODULES:
    try:
        __import__(f"k3deploy.cli.{_name}")
    except ModuleNotFoundError as _exc:  # a stage not built yet must not break the others
        if _exc.name != f"k3deploy.cli.{_name}":
            raise


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (`k3deploy render | head -1`): end quietly, as Python's documentation advises
    (signal module, "Note on SIGPIPE"): point stdout at /dev/null so the interpreter's final flush cannot fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


_TERMINATED: list[bool] = []


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM, handled as Ctrl-C is, so every `finally` (temporary folders, locks) runs before the exit (143).

    As Ctrl-C is: by the SIGINT handler in force, which inside `asyncio.run` cancels the main task first.
    """
    _TERMINATED.append(True)
    on_sigint = signal.getsignal(signal.SIGINT)
    if callable(on_sigint) and on_sigint is not signal.default_int_handler:
        on_sigint(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt


def _redeliver_interrupt(previous: Callable[[Any], None], unraisable: Any) -> None:
    """sys.unraisablehook: an interrupt (Ctrl-C, or SIGTERM handled as one) that Python raised inside code whose
    exceptions it only prints and drops (a weakref callback, such as the one importlib runs when a module's import
    lock goes, or a `__del__`) is delivered to the main thread again instead of being lost: otherwise a signal that
    lands while a command imports a module it loads on first use is printed as "Exception ignored" and the command
    runs on. Anything else goes to the hook that was in force."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        # Sent from another thread once this hook has returned (a signal handled inside the hook would be dropped
        # too), as a real signal, so a blocking call of the main thread is interrupted as Ctrl-C interrupts it. Should
        # it land in such a callback again, it comes back here and is sent again.
        main = threading.main_thread().ident
        threading.Thread(target=_signal_after, args=(main, _REDELIVER_AFTER_S), daemon=True).start()
        return
    previous(unraisable)


def _signal_after(thread_id: int | None, delay_s: float) -> None:
    time.sleep(delay_s)
    if thread_id is not None:
        signal.pthread_kill(thread_id, signal.SIGINT)


def _interrupted() -> NoReturn:
    print_error("interrupted", "re-run the same command: it continues from the live state")
    _forget_unhandled_interrupt()
    sys.exit(143 if _TERMINATED else 130)


def _forget_unhandled_interrupt() -> None:
    """Keep the exit code when the interrupt crossed code a library ran with PyRun_String.

    CPython marks a KeyboardInterrupt leaving such code as unhandled (Python/pythonrun.c, run_eval_code_obj) and then
    ends the process by SIGINT (Modules/main.c, Py_RunMain), though k3deploy handled it. Running an empty statement
    the same way clears the mark.
    """
    # Loaded on an interrupt only: ctypes costs every other run ~2 ms of start-up.
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.pythonapi.PyRun_SimpleString(b"pass")


DRY_RUN_KINDS = ("none", "client", "server")
#: Commands whose --dry-run takes a kind (kubectl's); elsewhere (`guard --dry-run`) it is a plain flag.
DRY_RUN_KIND_COMMANDS = ("apply",)


def _dry_run_args(args: list[str]) -> list[str]:
    """`--dry-run` as kubectl takes it: bare (server), `--dry-run=KIND` or `--dry-run KIND`, spelt out for click.

    The option itself takes a value (Typer has no optional-value options, and click's take the next word even when
    it is another option: `--dry-run --kubeconfig x` would read '--kubeconfig' as the kind), so a bare flag is
    given its value here.
    """
    if not args or args[0] not in DRY_RUN_KIND_COMMANDS:
        return args
    fixed: list[str] = []
    words = iter(range(len(args)))
    for i in words:
        if args[i] != "--dry-run" or "--" in args[:i]:
            fixed.append(args[i])
        elif i + 1 < len(args) and args[i + 1] in DRY_RUN_KINDS:
            fixed.append(f"--dry-run={args[i + 1]}")
            next(words)
        else:
            fixed.append("--dry-run=server")
    return fixed


def _goodput_args(args: list[str]) -> list[str]:
    """`--goodput ttft:500 tpot:20` as `vllm bench serve` spells it (one option, several words), one option per
    word for click: every following word that is NAME:VALUE belongs to it."""
    fixed: list[str] = []
    taking = False
    for i, word in enumerate(args):
        if "--" in args[:i]:
            taking = False
        elif word == "--goodput":
            taking = True
            continue
        elif taking and ":" in word and not word.startswith("-"):
            fixed += ["--goodput", word]
            continue
        else:
            taking = False
        fixed.append(word)
    return fixed


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; turn every K3DeployError into `error:` / `hint:` and its exit code."""
    signal.signal(signal.SIGTERM, _terminated)
    sys.unraisablehook = functools.partial(_redeliver_interrupt, sys.unraisablehook)
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    args = _goodput_args(_dry_run_args(args))
    command = app_for(args)
    if _completion.COMPLETE_VAR in os.environ:  # a completion script asks for completions: of every command
        _completion.register()
        command = app
    try:
        returned = command(args=args, prog_name="k3deploy", standalone_mode=False)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not in the interpreter's exit
    except BrokenPipeError:
        _quiet_broken_pipe()
    except SystemExit:
        # click ends a command whose stdout broke with a quiet sys.exit(1) after wrapping stdout in its
        # PacifyFlushWrapper; 1 means "a check failed" here, so report the broken pipe as such instead.
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _quiet_broken_pipe()
        raise
    except K3DeployError as exc:
        if debug:  # the traceback is extra; the exit code stays the one the error carries
            traceback.print_exc()
        print_error(exc.message, exc.hint)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        if _TERMINATED:
            _interrupted()
        print_error("aborted", None)
        sys.exit(130)
    except Exception as exc:
        # typer's (vendored) click usage errors: duck-typed, since typer moved click inside itself.
        if debug:
            traceback.print_exc()
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `k3deploy`: the help itself, not an error line
            typer.echo(exc.format_message(), err=True)  # type: ignore[attr-defined]
            sys.exit(EXIT_USAGE)
        exit_code = getattr(exc, "exit_code", None)
        if hasattr(exc, "format_message") and isinstance(exit_code, int):
            print_error(exc.format_message(), "run the command with --help for usage")
            sys.exit(EXIT_USAGE if exit_code == 2 else exit_code)
        print_error(f"unexpected {type(exc).__name__}: {exc}", "re-run with --debug for the traceback and report it")
        sys.exit(EXIT_ENVIRONMENT)
    if returned == 130:  # typer turns Ctrl-C into a returned 130 when not in standalone mode
        _interrupted()
    # A command's typer.Exit(code) comes back as its code when not in standalone mode (`apply --diff`'s 1).
    sys.exit(returned if isinstance(returned, int) else 0)
