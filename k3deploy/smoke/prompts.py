"""Smoke's prompts: the `smoke` subset of the built-in set (k3deploy.prompts), in its low- and high-entropy tiers."""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy import prompts as builtin
from k3deploy.measure.summary import TIERS
from k3deploy.report.smoke import Tier

SUBSET = "smoke"


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt of the set."""

    id: str
    tier: Tier
    text: str


def load_prompts() -> tuple[Prompt, ...]:
    """Every smoke prompt, low-entropy tier first, in file order."""
    chosen = builtin.subset(SUBSET)
    return tuple(Prompt(p.id, tier, p.text) for tier in TIERS for p in chosen if p.category == tier)


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
