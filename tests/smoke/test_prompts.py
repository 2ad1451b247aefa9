"""The built-in prompt set ships in the package with both tiers."""

from __future__ import annotations

from k3deploy.smoke.prompts import load_prompts, select


def test_both_tiers_unique_ids() -> None:
    prompts = load_prompts()
    ids = [p.id for p in prompts]
    assert len(ids) == len(set(ids))
    assert sum(p.tier == "low_entropy" for p in prompts) == 8 and sum(p.tier == "high_entropy" for p in prompts) == 6
    assert all(len(p.text) > 100 for p in prompts)


def test_select_cycles_and_alternates() -> None:
    low = select("low_entropy", 10)
    assert [p.id for p in low[8:]] == [low[0].id, low[1].id] and {p.tier for p in low} == {"low_entropy"}
    mixed = select("all", 4)
    assert [p.tier for p in mixed] == ["low_entropy", "high_entropy", "low_entropy", "high_entropy"]
    assert {p.tier for p in select("all", 14)} == {"low_entropy", "high_entropy"} and len(
        {p.id for p in select("all", 14)}
    ) == 14
