"""Loader tests: SPEED-Bench-, Spec-Bench-shaped, plain and placeholder files written here, and the built-in set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from k3deploy.bench import datasets
from k3deploy.bench.datasets import (
    QUALITATIVE_CATEGORIES,
    SPEED_BENCH_PLACEHOLDER,
    load_dataset,
    prompt_set_digest,
    select,
)
from k3deploy.errors import UsageError


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def speed_row(qid: str, category: str, *turns: str) -> dict:
    """A row as NeMo-Skills' prepare.py writes it: `turns` replaced by `messages`."""
    return {
        "question_id": qid,
        "category": category,
        "sub_category": None,
        "source": "x",
        "src_id": qid,
        "difficulty": None,
        "multiturn": len(turns) > 1,
        "messages": [{"role": "user", "content": t} for t in turns],
    }


def test_speed_bench_qualitative_reads_first_message_and_categories(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "qualitative.jsonl",
        [
            speed_row("q1", "coding", "write code", "now test it"),
            speed_row("q2", "math", "add 2 and 2"),
            speed_row("q3", "coding", "sort a list"),
        ],
    )
    ds = load_dataset(f"speed-bench:{tmp_path}")
    assert ds.subset == "qualitative" and ds.kind == "speed-bench"
    assert [(p.id, p.category, p.text) for p in ds.prompts] == [
        ("q1", "coding", "write code"),
        ("q2", "math", "add 2 and 2"),
        ("q3", "coding", "sort a list"),
    ]
    assert ds.categories() == ["coding", "math"]
    assert {c: [p.id for p in ps] for c, ps in select(ds, ["coding"], 1).items()} == {"coding": ["q1"]}


def test_speed_bench_throughput_subset_has_entropy_tiers(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "throughput_16k.jsonl",
        [
            speed_row(f"t{i}", tier, f"text {i}")
            for i, tier in enumerate(["low_entropy", "mixed", "high_entropy", "low_entropy"])
        ],
    )
    ds = load_dataset(f"speed-bench:{tmp_path}", "throughput_16k")
    assert ds.categories() == ["low_entropy", "mixed", "high_entropy"]
    assert ds.name == f"speed-bench:{tmp_path}/throughput_16k"


def test_speed_bench_raw_hub_placeholder_is_refused_with_the_prepare_command(tmp_path: Path) -> None:
    raw = {
        "question_id": "q1",
        "category": "coding",
        "turns": [SPEED_BENCH_PLACEHOLDER + " USING SPECDEC_BENCH\n\n{question}"],
    }
    write_jsonl(tmp_path / "qualitative.jsonl", [raw])
    with pytest.raises(UsageError) as exc:
        load_dataset(f"speed-bench:{tmp_path}")
    assert "placeholder" in exc.value.message and "qualitative.jsonl:1" in exc.value.message
    assert "prepare.py" in (exc.value.hint or "")


def test_placeholder_inside_messages_is_refused_too(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "qualitative.jsonl", [speed_row("q1", "qa", "real"), speed_row("q2", "qa", SPEED_BENCH_PLACEHOLDER)]
    )
    with pytest.raises(UsageError, match=r"qualitative.jsonl:2"):
        load_dataset(f"speed-bench:{tmp_path}")


def test_speed_bench_missing_subset_names_what_is_there(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "qualitative.jsonl", [speed_row("q1", "qa", "x")])
    with pytest.raises(UsageError, match=r"qualitative.jsonl") as exc:
        load_dataset(f"speed-bench:{tmp_path}", "throughput_1k")
    assert "throughput_1k.jsonl does not exist" in exc.value.message
    with pytest.raises(UsageError, match="not a SPEED-Bench subset"):
        load_dataset(f"speed-bench:{tmp_path}", "throughput_3k")
    with pytest.raises(UsageError, match="not a directory"):
        load_dataset(f"speed-bench:{tmp_path / 'qualitative.jsonl'}")


def test_spec_bench_question_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "question.jsonl",
        [
            {"question_id": 81, "category": "writing", "turns": ["Compose a blog post.", "Rewrite it."]},
            {"question_id": 161, "category": "translation", "turns": ["Translate: Hallo"]},
        ],
    )
    ds = load_dataset(f"spec-bench:{path}")
    assert [(p.id, p.category, p.text) for p in ds.prompts] == [
        ("81", "writing", "Compose a blog post."),
        ("161", "translation", "Translate: Hallo"),
    ]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"question_id": 1, "category": "qa", "turns": []}])
    with pytest.raises(UsageError, match=r"bad.jsonl:1: 'turns' is not a non-empty list"):
        load_dataset(f"spec-bench:{bad}")


def test_plain_jsonl_with_and_without_category(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"prompt": "a"}, {"prompt": "b", "category": "code"}])
    ds = load_dataset(f"jsonl:{path}")
    assert [(p.category, p.text) for p in ds.prompts] == [("all", "a"), ("code", "b")]
    (tmp_path / "broken.jsonl").write_text('{"prompt": "a"}\nnot json\n')
    with pytest.raises(UsageError, match=r"broken.jsonl:2: not JSON"):
        load_dataset(f"jsonl:{tmp_path / 'broken.jsonl'}")
    with pytest.raises(UsageError, match="no 'prompt' field"):
        load_dataset(f"jsonl:{write_jsonl(tmp_path / 'np.jsonl', [{'text': 'a'}])}")
    with pytest.raises(UsageError, match="does not exist"):
        load_dataset(f"jsonl:{tmp_path / 'absent.jsonl'}")
    with pytest.raises(UsageError, match="--subset applies"):
        load_dataset(f"jsonl:{path}", "qualitative")


@pytest.mark.parametrize("spec", ["", "builtin:x", "speedbench:/tmp", "jsonl", "jsonl:"])
def test_bad_dataset_spec_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError, match="is not builtin"):
        load_dataset(spec)


def test_builtin_set_covers_every_speed_bench_category_and_tier() -> None:
    qual = load_dataset("builtin")
    assert qual.categories() == list(QUALITATIVE_CATEGORIES)
    assert all(sum(p.category == c for p in qual.prompts) >= 3 for c in QUALITATIVE_CATEGORIES)
    tiers = load_dataset("builtin", "throughput")
    assert tiers.categories() == list(datasets.ENTROPY_TIERS)
    assert len({p.id for p in qual.prompts + tiers.prompts}) == len(qual.prompts) + len(tiers.prompts)
    with pytest.raises(UsageError, match="not in the built-in set") as exc:
        load_dataset("builtin", "throughput_16k")
    assert "speed-bench:DIR" in (exc.value.hint or "")


def test_select_refuses_unknown_category_and_digest_tracks_prompts() -> None:
    ds = load_dataset("builtin", "throughput")
    with pytest.raises(UsageError, match="--category nope") as exc:
        select(ds, ["nope"], None)
    assert "low_entropy" in (exc.value.hint or "")
    two = select(ds, None, 2)
    assert [len(v) for v in two.values()] == [2, 2, 2]
    flat = [p for ps in two.values() for p in ps]
    assert prompt_set_digest(flat) == prompt_set_digest(list(flat))
    assert prompt_set_digest(flat) != prompt_set_digest(flat[:-1])
    assert prompt_set_digest(flat) != prompt_set_digest(list(reversed(flat)))


@pytest.mark.parametrize("field", ["prompt", "category", "id"])
def test_a_lone_surrogate_is_refused_when_the_dataset_loads(tmp_path: Path, field: str) -> None:
    """Before: accepted here, then every request was sent and the run was lost when its report was written."""
    path = tmp_path / "d.jsonl"
    row = {"prompt": "hello", "category": "c", "id": "r1"} | {field: "bad \ud800 text"}
    path.write_text(json.dumps(row) + "\n")  # json.dumps writes the escape "\ud800": valid JSON, invalid text
    with pytest.raises(
        UsageError, match=rf"^{re.escape(str(path))}:1: .* is not valid Unicode text \(a lone surrogate\)$"
    ):
        load_dataset(f"jsonl:{path}", None)
