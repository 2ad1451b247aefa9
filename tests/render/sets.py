"""Names in the rendered set that the render computes: the prefetch Job's, whose name ends in a hash of its spec."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import COMPONENT_LABEL, PREFETCH_COMPONENT, build


def prefetch_name(objects: Iterable[dict[str, Any]]) -> str:
    """The prefetch Job's name in a rendered set (`<name>-prefetch-<hash>`)."""
    (name,) = [
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "Job" and o["metadata"]["labels"].get(COMPONENT_LABEL) == PREFETCH_COMPONENT
    ]
    return str(name)


def builtin_prefetch(profile: str, sets: list[str] | None = None) -> str:
    """The prefetch Job's name in the render of built-in `profile` with `sets`."""
    return prefetch_name(m.obj for m in build(load_profile(profile, sets or [])))
