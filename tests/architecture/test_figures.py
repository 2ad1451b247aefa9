"""The import graph's figures hold their ceilings (tests/architecture/figures.py prints them): no import circle,
no more arrows back up the stage order than today, and no more `Any` or `mypy --strict` errors than today. A
change that lowers a figure lowers its ceiling here too."""

from __future__ import annotations

import importlib.util

import pytest

from tests.architecture.figures import any_count, arrows, circles, module_graph, rank, strict_errors

#: Arrows back up the stage order still drawn, each a known debt. None: bench's A/B run, which deploys each variant,
#: and its rehearsal tokenizer once drew bench -> pipeline and bench -> targets; the command layer now passes both in
#: (cli/bench_serving.py).
ARROWS_BACK_UP: set[tuple[str, str]] = set()
#: 363 after the architecture step; the merges after it added the profile loader's blame search over raw layers,
#: the gpu-check script's JSON facts, stage/'s JSON records, the prefetch's name hash and image-vLLM reads, guard
#: (396). 229 once cluster objects are `KubeObject` and other JSON objects `JsonObject` (kobject.py); 226 without the
#: local target's handover.
ANY_CEILING = 226
#: Calls into kubernetes, typer and PyYAML, which ship no types (12 before the smoke report's two bare `dict`s were typed).
STRICT_CEILING = 9


def test_the_figures_see_what_they_count() -> None:
    graph = module_graph()
    assert "k3deploy.targets.kubernetes.wait" in graph["k3deploy.targets.kubernetes.target"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert rank("errors") < rank("kube") < rank("rollout") < rank("targets") < rank("pipeline") < rank("cli")


def test_no_import_circle() -> None:
    """Between any two k3deploy modules, type-only imports included (errors.py -> rollout/diagnosis.py ->
    kube/api.py -> errors.py was one, and the profile package's names <-> its loader another)."""
    assert circles(module_graph()) == []


def test_no_new_arrow_back_up_the_stages_and_none_sideways() -> None:
    up, side = arrows(module_graph())
    assert up <= ARROWS_BACK_UP, up - ARROWS_BACK_UP
    assert up == ARROWS_BACK_UP, "an arrow is gone: drop it from ARROWS_BACK_UP"
    assert side == set()  # smoke and bench, peers, import neither way (both use measure/)


def test_any_stays_under_its_ceiling() -> None:
    count = any_count()
    assert count <= ANY_CEILING
    assert count > ANY_CEILING - 20, f"Any is down to {count}: lower ANY_CEILING"


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is a dev dependency")
def test_mypy_strict_errors_stay_under_their_ceiling() -> None:
    """`mypy --strict k3deploy` (about a minute cold): the errors left are at third-party boundaries."""
    assert strict_errors() <= STRICT_CEILING
