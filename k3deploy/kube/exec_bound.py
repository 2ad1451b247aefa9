"""The kubeconfig's `exec` credential plugin, run inside the command's deadline.

kubernetes/config/exec_provider.py starts the plugin with `subprocess.Popen(...)` and waits on `communicate()`
with no timeout, so a plugin that hangs (an SSO prompt nobody answers, a metadata endpoint that never replies)
holds `status --timeout 10s` for ever: `--timeout` must cover loading the credentials too. `install` gives that
module a `subprocess` whose `Popen` starts the plugin in a process group of its own and whose `communicate` waits at
most what is left of the deadline (`EXEC_TIMEOUT_S` without one); past it that whole group (the plugin, which this
process started, and whatever it started: a `sleep` a script left holding its stdout) is killed and the command ends
with exit 3.
The library also runs the plugin again when its token expires mid-command: the same bound applies then.
kubernetes/config/kube_config.py `_load_from_exec_plugin` logs and swallows whatever the plugin run raises, so
the timeout is also kept by the `loading` it ran inside (a context variable names that call's own `_Loading`,
so a connect in another thread keeps its own), which raises it once the library returns (its log line dropped:
the error is printed once, as k3deploy's).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import signal
import subprocess
import types
from collections.abc import Iterator
from typing import Any

from kubernetes.config import exec_provider

from k3deploy.errors import ExecPluginTimeout
from k3deploy.kube.deadline import Deadline

#: How long a plugin may run when the command has no deadline (kubectl has none; a hung one would hang us).
EXEC_TIMEOUT_S = 60.0
#: Seconds to collect a plugin's group once it was sent SIGKILL.
REAP_S = 5.0


class _Loading(logging.Filter):
    """One `loading` call: the plugin timeouts its library call swallowed, and the filter that drops their log lines."""

    def __init__(self) -> None:
        super().__init__()
        self.timed_out: list[ExecPluginTimeout] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """False for the library's log line of a plugin timeout of this call."""
        return not any(record.getMessage() == exc.message for exc in self.timed_out)


#: The `loading` call the current thread (context) is inside; a plugin run outside any has nobody to tell.
_LOADING: contextvars.ContextVar[_Loading | None] = contextvars.ContextVar("k3deploy_exec_loading", default=None)


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Around the library's kubeconfig loading: raise the plugin timeout it swallowed, without its log line."""
    this = _Loading()
    token = _LOADING.set(this)
    root = logging.getLogger()
    root.addFilter(this)
    try:
        yield
    finally:
        root.removeFilter(this)
        _LOADING.reset(token)
    if this.timed_out:
        raise this.timed_out[-1]


def _end_group(leader: int) -> None:
    """SIGKILL the process group `leader` leads, and so whatever the plugin started (a child holding its stdout would
    keep `communicate()` waiting): the group is ours, made when this process started the plugin (`process_group=0`),
    and its leader is not reaped yet, so its id cannot name another group."""
    with contextlib.suppress(ProcessLookupError):  # every process of the group has ended
        os.killpg(leader, signal.SIGKILL)


def _bounded_popen(deadline: Deadline) -> type[subprocess.Popen[Any]]:
    class BoundedPopen(subprocess.Popen[Any]):
        """Popen that starts the plugin in a process group of its own and whose `communicate()` ends at the deadline,
        ending that whole group."""

        def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
            left = deadline.remaining()
            bound = EXEC_TIMEOUT_S if left is None else max(0.1, left)
            try:
                return super().communicate(input, timeout=bound if timeout is None else min(timeout, bound))
            except subprocess.TimeoutExpired:
                _end_group(self.pid)
                try:
                    super().communicate(timeout=REAP_S)
                except subprocess.TimeoutExpired:
                    self.kill()
                    self.wait(timeout=REAP_S)
                within = f"the command's deadline of {deadline.seconds:g}s" if left is not None else f"{bound:g}s"
                failure = ExecPluginTimeout(
                    f"the kubeconfig's exec credential plugin {self.args[0] if isinstance(self.args, list) else self.args!r} "
                    f"did not finish within {within}; it was ended with every process it started",
                    hint="run the plugin by hand to see what it waits for (a login prompt, a network call)"
                    + deadline.hint_tail(),
                )
                inside = _LOADING.get()
                if inside is not None:
                    inside.timed_out.append(failure)
                raise failure from None

    return BoundedPopen


def install(deadline: Deadline) -> None:
    """Make kubernetes' exec provider run plugins under `deadline` (the last connect's deadline wins)."""
    bounded = types.SimpleNamespace(**{name: getattr(subprocess, name) for name in ("PIPE", "DEVNULL", "STDOUT")})
    # Each plugin in a process group of its own (not a session of its own: an interactive plugin keeps the
    # terminal), so what it starts can be ended with it.
    bounded.Popen = functools.partial(_bounded_popen(deadline), process_group=0)
    exec_provider.subprocess = bounded  # type: ignore[assignment]
