"""An interrupt Python would drop is delivered again (cli/__init__.py `_redeliver_interrupt`).

A signal handled as KeyboardInterrupt can land while Python runs a callback whose exceptions it only prints ("Exception
ignored in: <function _get_module_lock.<locals>.cb>", importlib's, seen when SIGINT reached `up` while it imported a
module on first use): the interrupt was lost and the command ran on to its own timeout.
"""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from k3deploy.cli import _redeliver_interrupt
from tests.conftest import REPO_ROOT, cli_env

#: A child whose interrupt is raised in a weakref callback, as a signal landing in importlib's module-lock one is;
#: it exits 42 when the interrupt reaches its main loop, 0 when it was dropped.
CHILD = """
import functools, sys, time, weakref
from k3deploy.cli import _redeliver_interrupt
if sys.argv[1] == "hooked":
    sys.unraisablehook = functools.partial(_redeliver_interrupt, sys.unraisablehook)
class Held: pass
def dropped(_ref): raise KeyboardInterrupt
held = Held(); ref = weakref.ref(held, dropped); del held
end = time.monotonic() + 4
try:
    while time.monotonic() < end:
        pass
except KeyboardInterrupt:
    sys.exit(42)
"""


def _child(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=60, env=cli_env(), cwd=REPO_ROOT
    )


def test_an_interrupt_raised_where_python_drops_it_reaches_the_main_thread() -> None:
    dropped = _child("plain")
    assert (dropped.returncode, "Exception ignored" in dropped.stderr) == (0, True), dropped.stderr
    delivered = _child("hooked")
    assert delivered.returncode == 42, delivered.stderr
    assert "Exception ignored" not in delivered.stderr


def test_anything_else_goes_to_the_hook_in_force() -> None:
    seen: list[Any] = []
    other = SimpleNamespace(exc_type=ValueError, exc_value=ValueError("x"), object=None)
    _redeliver_interrupt(seen.append, other)
    assert seen == [other]
