"""Smoke stage: prove a running endpoint is correct, fast enough and really speculating.

Public surface: `run_smoke(profile, endpoint, options) -> SmokeReport`, `SmokeOptions` and `exit_code(report)`.
They are loaded on first use, so importing a pure module of this package (sse, metrics, summary, verdict)
does not import httpx.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SmokeOptions", "exit_code", "run_smoke"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from k3deploy.smoke import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
