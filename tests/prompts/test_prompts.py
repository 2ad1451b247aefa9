"""One built-in prompt set: `k3deploy smoke` and `k3deploy bench --dataset builtin` both send what builtin.yaml holds."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy import prompts
from k3deploy.bench.datasets import load_dataset
from k3deploy.smoke.correctness import PROBES
from k3deploy.smoke.prompts import load_prompts
from tests.conftest import REPO_ROOT, run_cli
from tests.smoke.scripted_server import Script, scripted_server

#: A set in the file's shape, swapped in for builtin.yaml: texts no shipped prompt has.
SWAPPED: dict[str, dict[str, list[Any]]] = {
    "smoke": {
        "low_entropy": [{"id": "swap-low", "text": "  swapped low-entropy smoke prompt\n"}],
        "high_entropy": [{"id": "swap-high", "text": "swapped high-entropy smoke prompt"}],
    },
    "qualitative": {"coding": ["swapped coding prompt"]},
    "throughput": {"low_entropy": ["swapped throughput prompt one", "swapped throughput prompt two"]},
}


def _sent(bodies: list[dict[str, Any]]) -> list[str]:
    """The prompt text of every request the server received, in order (a completion's prompt, a chat's last turn)."""
    return [b["prompt"] if "prompt" in b else b["messages"][-1]["content"] for b in bodies]


def test_the_package_ships_one_prompt_file_and_the_subsets_each_command_uses() -> None:
    shipped = sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "k3deploy").rglob("*.yaml"))
    assert [p for p in shipped if not p.startswith("k3deploy/profile/builtin/")] == ["k3deploy/prompts/builtin.yaml"]
    assert prompts.subsets() == ("smoke", "qualitative", "throughput")
    everything = [p for name in prompts.subsets() for p in prompts.subset(name)]
    assert len({p.id for p in everything}) == len(everything) == 14 + 33 + 12
    with pytest.raises(KeyError, match="no built-in prompt subset 'nope'"):
        prompts.subset("nope")


def test_smoke_and_bench_read_their_subsets_of_the_one_set() -> None:
    assert [(p.id, p.tier, p.text) for p in load_prompts()] == [
        (p.id, p.category, p.text) for p in prompts.subset("smoke")
    ]
    for subset in ("qualitative", "throughput"):
        bench = load_dataset("builtin", subset).prompts
        assert [(p.id, p.category, p.text) for p in bench] == [
            (p.id, p.category, p.text) for p in prompts.subset(subset)
        ]
    # Plain entries are numbered within their category; an entry with an id keeps its own.
    assert [p.id for p in prompts.subset("throughput")][:2] == ["low_entropy-1", "low_entropy-2"]
    assert prompts.subset("smoke")[0].id == "code-fizzbuzz-variants"


def test_both_commands_send_what_the_set_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Swap the set the loader reads: smoke's measured requests and bench's requests carry the swapped texts."""
    monkeypatch.setattr(prompts, "_raw", lambda: SWAPPED)
    probe_texts = {p.prompt for p in PROBES}
    with scripted_server(Script(chunk_delay_s=0.0)) as srv:
        smoke = run_cli("smoke", "--endpoint", srv.url, "--requests", "2", "--output-tokens", "8", "-o", "json")
        smoke_sent = [t for t in _sent(list(srv.bodies)) if t not in probe_texts]
        srv.bodies.clear()
        bench = run_cli(
            "bench",
            "--endpoint",
            srv.url,
            "-p",
            "local-cpu",
            "--dataset",
            "builtin",
            "--subset",
            "throughput",
            "--output-tokens",
            "8",
            "-o",
            "json",
        )
        bench_sent = _sent(list(srv.bodies))
    assert smoke.returncode in (0, 1), smoke.stderr  # a verdict was reached (the scripted speed is no concern here)
    # local-cpu's tier is low_entropy: the warm-up and both measured requests cycle through that tier's one prompt.
    assert smoke_sent == ["swapped low-entropy smoke prompt"] * 3
    assert bench.returncode == 0, bench.stderr
    assert set(bench_sent) == {"swapped throughput prompt one", "swapped throughput prompt two"}
