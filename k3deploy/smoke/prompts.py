"""The built-in prompt set (prompts.yaml beside this module): low-entropy and high-entropy tiers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from k3deploy.report.smoke import Tier
from k3deploy.smoke.summary import TIERS


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt of the set."""

    id: str
    tier: Tier
    text: str


@lru_cache(maxsize=1)
def load_prompts() -> tuple[Prompt, ...]:
    """Every built-in prompt, low-entropy tier first, in file order."""
    raw = yaml.safe_load(resources.files("k3deploy.smoke").joinpath("prompts.yaml").read_text(encoding="utf-8"))
    return tuple(Prompt(item["id"], tier, item["text"].strip()) for tier in TIERS for item in raw[tier])


def select(tier: str, count: int) -> list[Prompt]:
    """`count` prompts of a tier ('all' alternates the tiers), cycling through the set when it is shorter."""
    prompts = load_prompts()
    if tier == "all":
        low = [p for p in prompts if p.tier == "low_entropy"]
        high = [p for p in prompts if p.tier == "high_entropy"]
        pool = [p for pair in zip(low, high, strict=False) for p in pair] + low[len(high) :] + high[len(low) :]
    else:
        pool = [p for p in prompts if p.tier == tier]
    if not pool:
        raise ValueError(f"no built-in prompts for tier {tier!r}")
    return [pool[i % len(pool)] for i in range(count)]
