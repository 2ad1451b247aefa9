"""Profiles: the pydantic model, the built-in profiles and loading with `--set` overrides.

The names below load their modules on first use (PEP 562), so `import k3deploy.profile.names` or the CLI's
start-up (`--help`) does not build the profile models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from k3deploy.profile.default import DEFAULT_PROFILE

if TYPE_CHECKING:
    from k3deploy.profile.load import builtin_names, load_profile, profile_schema
    from k3deploy.profile.model import Profile

__all__ = ["DEFAULT_PROFILE", "Profile", "builtin_names", "load_profile", "profile_schema"]
_WHERE = {"Profile": "model", "builtin_names": "load", "load_profile": "load", "profile_schema": "load"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"k3deploy.profile.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
