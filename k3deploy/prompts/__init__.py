"""The built-in prompt set (builtin.yaml beside this module), the one both `k3deploy smoke` and `k3deploy bench`
draw from. Pure: it reads a file of the package and nothing else.

The file maps a subset (`smoke`, `qualitative`, `throughput`) to its categories (a task kind or an entropy tier) and
each category to its prompts, in file order. Smoke keeps its own tiers and selection (k3deploy.smoke.prompts); bench
wraps a subset as a dataset (k3deploy.bench.datasets.load_builtin).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

SET_FILE = "builtin.yaml"


@dataclass(frozen=True, slots=True)
class Prompt:
    """One built-in prompt: its id (unique in the set), its category in its subset, and its text."""

    id: str
    category: str
    text: str


@lru_cache(maxsize=1)
def _raw() -> dict[str, dict[str, list[Any]]]:
    text = resources.files(__name__).joinpath(SET_FILE).read_text(encoding="utf-8")
    raw: dict[str, dict[str, list[Any]]] = yaml.safe_load(text)
    return raw


def subsets() -> tuple[str, ...]:
    """The subsets of the set, in file order."""
    return tuple(_raw())


def subset(name: str) -> tuple[Prompt, ...]:
    """Every prompt of a subset, category by category in file order; a plain-text entry's id is `<category>-<n>`."""
    categories = _raw().get(name)
    if categories is None:
        raise KeyError(f"no built-in prompt subset {name!r} (there are {', '.join(subsets())})")
    return tuple(
        Prompt(entry["id"], category, entry["text"].strip())
        if isinstance(entry, dict)
        else Prompt(f"{category}-{n}", category, entry.strip())
        for category, entries in categories.items()
        for n, entry in enumerate(entries, start=1)
    )


def set_digest(rows: Iterable[tuple[str, str, str]]) -> str:
    """sha256 over (id, category, text) of each prompt, in order: two runs with the same digest sent the same
    prompts (bench records it as settings.prompt_set_sha256; the canary's dataset ConfigMap as its revision)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(list(row), ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()
