"""What the command layer hands the bench stage (cli/bench_serving.py): the profile's target through the pipeline,
and a rehearsal profile's tokenizer folder (the serving itself runs in tests/integration/test_bench_ab.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.bench.cli_run import Request, tokenizer_for
from k3deploy.cli.bench_serving import rehearsal_tokenizer, serving_for
from k3deploy.errors import UsageError
from k3deploy.profile import load_profile
from k3deploy.targets.local.rehearsal import _REQUIRED_FILES, MARKER_NAME, marker


def test_only_the_local_target_serves_variants() -> None:
    assert serving_for(load_profile("local-cpu")).serves_variants
    assert not serving_for(load_profile("kimi-k3-gb300-tp16")).serves_variants


def test_the_rehearsal_tokenizer_is_the_generated_model_folder_once_complete(tmp_path: Path) -> None:
    profile = load_profile("local-cpu", [f"local.state_dir={tmp_path}"])
    with pytest.raises(UsageError, match=f"{tmp_path / 'model'} holds none yet"):
        rehearsal_tokenizer(profile)
    folder = tmp_path / "model"
    folder.mkdir()
    for name in _REQUIRED_FILES:
        (folder / name).write_text("{}", encoding="utf-8")
    with pytest.raises(UsageError):  # the files without the marker's recipe are not the model
        rehearsal_tokenizer(profile)
    (folder / MARKER_NAME).write_text(json.dumps(marker(1000)), encoding="utf-8")
    assert rehearsal_tokenizer(profile) == str(folder)


def test_bench_asks_the_command_layer_for_a_rehearsal_tokenizer() -> None:
    """bench/cli_run.py knows no target: --tokenizer wins, a rehearsal profile's comes from what the command layer
    passed, and without it the refusal names --tokenizer."""
    profile = load_profile("local-cpu")
    assert profile.model.rehearsal
    assert tokenizer_for(Request(endpoint=None, profile="local-cpu", tokenizer="/t"), profile) == "/t"
    passed = Request(endpoint=None, profile="local-cpu", rehearsal_tokenizer=lambda p: f"/models/{p.name}")
    assert tokenizer_for(passed, profile) == "/models/local-cpu"
    with pytest.raises(UsageError, match="needs its tokenizer") as refused:
        tokenizer_for(Request(endpoint=None, profile="local-cpu"), profile)
    assert refused.value.hint == "pass --tokenizer PATH"
