"""The rehearsal model: generated offline, deterministic, labelled, reused, and never over a foreign folder."""

from __future__ import annotations

import hashlib
import json
import sys
import venv
from pathlib import Path

import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.targets.local.rehearsal import (
    MARKER_NAME,
    RECIPE_VERSION,
    ensure_rehearsal_model,
    ensure_rehearsal_model_with,
    is_rehearsal_model,
)

#: The rehearsal model is generated with transformers, which comes with vLLM: the integration tier's.
pytestmark = pytest.mark.integration


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file in `folder`, by name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_rehearsal_model(tmp_path_factory.mktemp("first") / "model")


def test_generated_folder_is_a_labelled_llama_with_its_tokenizer(model_dir: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]) == (64, 2, 2)
    assert config["hidden_size"] // config["num_attention_heads"] == 32
    marker = json.loads((model_dir / MARKER_NAME).read_text())
    assert marker["kind"] == "k3deploy-rehearsal-model"
    assert marker["recipe_version"] == RECIPE_VERSION
    assert "not Kimi K3" in marker["note"]
    assert marker["vocab_size"] == config["vocab_size"]
    assert is_rehearsal_model(model_dir)


def test_tokenizer_round_trips_text_and_model_never_prefers_a_special_token(model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    text = "Count from one to twenty: one, two, three. Ünïcödé too."
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert len(tokenizer) == json.loads((model_dir / "config.json").read_text())["vocab_size"]
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    with torch.no_grad():
        logits = model(torch.tensor([tokenizer(text)["input_ids"]])).logits[0]
    assert set(logits.argmax(dim=-1).tolist()).isdisjoint(tokenizer.all_special_ids)


def test_second_build_elsewhere_is_byte_identical(model_dir: Path, tmp_path: Path) -> None:
    again = ensure_rehearsal_model(tmp_path / "model")
    assert digests(again) == digests(model_dir)


def test_existing_model_is_reused_untouched(model_dir: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
    assert ensure_rehearsal_model(model_dir) == model_dir
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == before
    assert [p.name for p in model_dir.parent.iterdir()] == ["model"]  # no temporary folder left behind


def test_outdated_recipe_is_rebuilt(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    dest.mkdir()
    (dest / MARKER_NAME).write_text(json.dumps({"kind": "k3deploy-rehearsal-model", "recipe_version": 0}))
    assert not is_rehearsal_model(dest)
    ensure_rehearsal_model(dest)
    assert is_rehearsal_model(dest)


def test_foreign_folder_is_never_overwritten(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    dest.mkdir()
    (dest / "weights.bin").write_text("someone else's")
    with pytest.raises(EnvironmentProblem, match="exists but is not a k3deploy rehearsal model"):
        ensure_rehearsal_model(dest)
    assert [p.name for p in dest.iterdir()] == ["weights.bin"]


def test_another_interpreter_can_generate_it_identically(model_dir: Path, tmp_path: Path) -> None:
    # The path taken when k3deploy runs without torch and local.python points at the vLLM environment.
    made = ensure_rehearsal_model_with(sys.executable, tmp_path / "elsewhere")
    assert made == tmp_path / "elsewhere"
    assert digests(made) == digests(model_dir)


def test_generation_by_an_interpreter_without_transformers_fails_with_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    with pytest.raises(
        EnvironmentProblem,
        match=r"cannot generate the rehearsal model with .*bare/bin/python: error: "
        r"cannot generate the rehearsal model: No module named '(tokenizers|transformers|torch)'",
    ):
        ensure_rehearsal_model_with(str(bare / "bin" / "python"), tmp_path / "model")
    assert not (tmp_path / "model").exists()
