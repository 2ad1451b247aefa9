"""The local target: a vLLM OpenAI server as a managed background process on this host.

`LocalTarget` is imported on first use, so `k3deploy.targets.local.rehearsal` stays light to import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LocalTarget"]


def __getattr__(name: str) -> Any:
    if name == "LocalTarget":
        from k3deploy.targets.local.target import LocalTarget

        return LocalTarget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
