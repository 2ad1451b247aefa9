"""Bench prompt sets: the built-in offline set, a SPEED-Bench directory, Spec-Bench's question.jsonl, plain JSONL.

Read the way `vllm bench serve` reads them (vllm-project/vllm, vllm/benchmarks/datasets/datasets.py):
- SPEED-Bench (`SpeedBench.load_data`): a directory holding `<subset>.jsonl` (subsets `qualitative`,
  `throughput_1k` ... `throughput_32k`), one object per line with a `messages` list; the prompt is
  `messages[0]["content"]` and `--speed-bench-category` keeps the rows whose `category` equals it. In
  `qualitative` the categories are the 11 task kinds; in `throughput_*` they are the entropy tiers
  `low_entropy`, `mixed`, `high_entropy`.
- Spec-Bench (`SpecBench.load_data`): `question.jsonl` rows with `turns` (prompt = `turns[0]`) and `category`.
- Plain JSONL (`CustomDataset`): rows with `prompt`; k3deploy also reads an optional `category`.
Unlike vLLM, rows stay in file order (vLLM shuffles unless `--disable-shuffle`): like-for-like runs need the
same prompts in the same order.

The SPEED-Bench files on the Hub (`nvidia/SPEED-Bench`) ship placeholder `turns`
("FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE ...") instead of the prompts; the real prompts are rebuilt
by NeMo-Skills' preparation script (NVIDIA-NeMo/Skills, nemo_skills/dataset/speed-bench/prepare.py), which
writes `messages`. Such files are refused with the command that prepares the real data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from k3deploy import prompts as builtin
from k3deploy.errors import UsageError
from k3deploy.fileio.read import read_text_capped
from k3deploy.kobject import JsonObject

#: The placeholder the public SPEED-Bench rows carry instead of their prompts (prepare.py's TURNS_PLACEHOLDER).
SPEED_BENCH_PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE"
#: What vLLM's SpeedBench loader tells users to run to get the real data.
SPEED_BENCH_PREPARE = (
    "curl -LsSf https://raw.githubusercontent.com/NVIDIA-NeMo/Skills/refs/heads/main/"
    "nemo_skills/dataset/speed-bench/prepare.py | python3 - --output_dir DIR"
)
SPEED_BENCH_SUBSETS = (
    "qualitative",
    "throughput_1k",
    "throughput_2k",
    "throughput_8k",
    "throughput_16k",
    "throughput_32k",
)
#: SPEED-Bench's qualitative categories (the built-in set mirrors them).
QUALITATIVE_CATEGORIES = (
    "coding",
    "humanities",
    "math",
    "multilingual",
    "qa",
    "rag",
    "reasoning",
    "roleplay",
    "stem",
    "summarization",
    "writing",
)
ENTROPY_TIERS = ("low_entropy", "mixed", "high_entropy")
BUILTIN_SUBSETS = ("qualitative", "throughput")
DATASET_KINDS = ("builtin", "speed-bench", "spec-bench", "jsonl")


#: A dataset file is a few MiB of prompts (SPEED-Bench's largest split is ~100 MiB); larger is not one.
MAX_DATASET_BYTES = 512 << 20


@dataclass(frozen=True, slots=True)
class BenchPrompt:
    """One prompt: a stable id, its category (task kind or entropy tier) and its text; a random-dataset prompt also
    has its own output length and prompt token count."""

    id: str
    category: str
    text: str
    output_tokens: int | None = None
    prompt_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded prompt set and where it came from."""

    kind: str
    source: str
    subset: str | None
    prompts: tuple[BenchPrompt, ...]

    @property
    def name(self) -> str:
        """`kind[:source][/subset]`, the identity `bench compare` matches on."""
        where = "" if self.kind == "builtin" else f":{self.source}"
        return f"{self.kind}{where}" + (f"/{self.subset}" if self.subset else "")

    def categories(self) -> list[str]:
        """Categories in first-seen order."""
        return list(dict.fromkeys(p.category for p in self.prompts))


def prompt_set_digest(prompts: list[BenchPrompt] | tuple[BenchPrompt, ...]) -> str:
    """sha256 over the ids, categories and texts, in order: two runs with the same digest sent the same prompts."""
    return builtin.set_digest((p.id, p.category, p.text) for p in prompts)


def _bad(path: Path, line: int, why: str, hint: str) -> UsageError:
    return UsageError(f"{path}:{line}: {why}", hint=hint)


def read_jsonl(path: Path) -> list[tuple[int, JsonObject]]:
    """(line number, object) of every non-blank line; a line that is not a JSON object is a usage error."""
    try:
        text = read_text_capped(path, MAX_DATASET_BYTES, "dataset file", hint="pass a UTF-8 JSONL file")
    except FileNotFoundError:
        raise UsageError(f"dataset file {path} does not exist", hint="check the path after the dataset kind") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(path, number, f"not JSON ({exc.msg})", "each line must be one JSON object (JSONL)") from None
        except RecursionError:
            raise _bad(path, number, "JSON nested too deeply", "each line must be one flat JSON object") from None
        if not isinstance(obj, dict):
            raise _bad(path, number, "not a JSON object", "each line must be one JSON object (JSONL)")
        rows.append((number, obj))
    if not rows:
        raise UsageError(f"dataset file {path} holds no rows", hint="pass a JSONL file with one object per line")
    return rows


def _placeholder(path: Path, line: int) -> UsageError:
    return UsageError(
        f"{path}:{line}: this is the public SPEED-Bench file, whose prompts are placeholders "
        f"({SPEED_BENCH_PLACEHOLDER!r}), not the benchmark data",
        hint=f"prepare the real prompts (they are fetched from their sources): {SPEED_BENCH_PREPARE}; "
        "then pass --dataset speed-bench:DIR",
    )


def _unicode(value: str, path: Path, line: int, field: str) -> str:
    """`value`, refused when it cannot be sent or written as UTF-8 (a lone surrogate from a JSON "\\ud800" escape):
    found at load time, not after every request of the run was sent and the report could not be written."""
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise _bad(
            path, line, f"{field} is not valid Unicode text (a lone surrogate)", "fix the row's text; it must be UTF-8"
        )
    return value


def _text(value: object, path: Path, line: int, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(path, line, f"{field} is not a non-empty string", "see the dataset format in docs/guide/bench.md")
    _unicode(value, path, line, field)
    if value.startswith(SPEED_BENCH_PLACEHOLDER):
        raise _placeholder(path, line)
    return value


def _first_turn(row: JsonObject, key: str, path: Path, line: int) -> object:
    turns = row.get(key)
    if not isinstance(turns, list) or not turns:
        raise _bad(path, line, f"'{key}' is not a non-empty list", "see the dataset format in docs/guide/bench.md")
    return turns[0]


def _category(row: JsonObject, default: str, path: Path, line: int) -> str:
    value = row.get("category", default)
    if not isinstance(value, str) or not value:
        raise _bad(path, line, "'category' is not a non-empty string", "give every row a category, or none")
    return _unicode(value, path, line, "'category'")


def _row_id(row: JsonObject, fallback: str, path: Path, line: int) -> str:
    value = row.get("question_id", row.get("id"))
    return _unicode(str(value), path, line, "the row's id") if value is not None else fallback


def load_speed_bench(directory: Path, subset: str) -> Dataset:
    """`<directory>/<subset>.jsonl` as vLLM's SpeedBench reads it: prompt = messages[0].content."""
    if subset not in SPEED_BENCH_SUBSETS:
        raise UsageError(
            f"--subset {subset!r} is not a SPEED-Bench subset", hint="one of " + ", ".join(SPEED_BENCH_SUBSETS)
        )
    if not directory.is_dir():
        raise UsageError(
            f"speed-bench:{directory} is not a directory",
            hint=f"pass the folder the SPEED-Bench preparation wrote: {SPEED_BENCH_PREPARE}",
        )
    path = directory / f"{subset}.jsonl"
    if not path.is_file():
        present = sorted(p.name for p in directory.glob("*.jsonl")) or ["no .jsonl files"]
        raise UsageError(
            f"{path} does not exist (the folder holds: {', '.join(present)})",
            hint=f"prepare that subset: {SPEED_BENCH_PREPARE.replace('--output_dir', f'--config {subset} --output_dir')}",
        )
    prompts = []
    for line, row in read_jsonl(path):
        if "messages" not in row:
            turns = row.get("turns")
            if (
                isinstance(turns, list)
                and turns
                and isinstance(turns[0], str)
                and turns[0].startswith(SPEED_BENCH_PLACEHOLDER)
            ):
                raise _placeholder(path, line)
            raise _bad(
                path,
                line,
                "no 'messages' list (vLLM's SpeedBench loader reads messages[0].content)",
                f"prepare the data with {SPEED_BENCH_PREPARE}",
            )
        first = _first_turn(row, "messages", path, line)
        content = first.get("content") if isinstance(first, dict) else None
        text = _text(content, path, line, "messages[0].content")
        prompts.append(
            BenchPrompt(_row_id(row, f"{subset}-{line}", path, line), _category(row, "uncategorized", path, line), text)
        )
    return Dataset("speed-bench", str(directory), subset, tuple(prompts))


def load_spec_bench(path: Path) -> Dataset:
    """Spec-Bench's question.jsonl as vLLM's SpecBench reads it: prompt = turns[0]."""
    prompts = []
    for line, row in read_jsonl(path):
        text = _text(_first_turn(row, "turns", path, line), path, line, "turns[0]")
        prompts.append(
            BenchPrompt(_row_id(row, f"q{line}", path, line), _category(row, "uncategorized", path, line), text)
        )
    return Dataset("spec-bench", str(path), None, tuple(prompts))


def load_jsonl(path: Path) -> Dataset:
    """Plain JSONL as vLLM's CustomDataset reads it (`prompt`), plus an optional `category` (default `all`)."""
    prompts = []
    for line, row in read_jsonl(path):
        if "prompt" not in row:
            raise _bad(path, line, "no 'prompt' field", 'each line needs {"prompt": "..."} (and may add "category")')
        prompts.append(
            BenchPrompt(
                _row_id(row, f"p{line}", path, line),
                _category(row, "all", path, line),
                _text(row["prompt"], path, line, "prompt"),
            )
        )
    return Dataset("jsonl", str(path), None, tuple(prompts))


def load_builtin(subset: str) -> Dataset:
    """A subset of the built-in set (k3deploy.prompts, the one smoke draws from too): `qualitative` (SPEED-Bench's 11
    categories) or `throughput` (its 3 entropy tiers)."""
    if subset not in BUILTIN_SUBSETS:
        raise UsageError(
            f"--subset {subset!r} is not in the built-in set (it has {', '.join(BUILTIN_SUBSETS)})",
            hint="SPEED-Bench's throughput_Nk subsets need the real data: --dataset speed-bench:DIR",
        )
    prompts = tuple(BenchPrompt(p.id, p.category, p.text) for p in builtin.subset(subset))
    return Dataset("builtin", "builtin", subset, prompts)


def load_dataset(spec: str, subset: str | None = None) -> Dataset:
    """`builtin` | `speed-bench:DIR` | `spec-bench:FILE` | `jsonl:FILE`; `subset` applies to builtin and speed-bench."""
    kind, _, where = spec.partition(":")
    if kind not in DATASET_KINDS or (kind == "builtin") != (where == ""):
        raise UsageError(
            f"--dataset {spec!r} is not builtin, speed-bench:DIR, spec-bench:FILE or jsonl:FILE",
            hint="for example --dataset speed-bench:./speed-bench or --dataset jsonl:prompts.jsonl",
        )
    if kind == "builtin":
        return load_builtin(subset or "qualitative")
    if kind == "speed-bench":
        return load_speed_bench(Path(where).expanduser(), subset or "qualitative")
    if subset is not None:
        raise UsageError(f"--subset applies to builtin and speed-bench datasets, not {kind}", hint="drop --subset")
    return load_spec_bench(Path(where).expanduser()) if kind == "spec-bench" else load_jsonl(Path(where).expanduser())


def select(dataset: Dataset, categories: list[str] | None, per_category: int | None) -> dict[str, list[BenchPrompt]]:
    """Prompts per category in file order: only `categories` when given (each must exist), the first `per_category`."""
    present = dataset.categories()
    if categories:
        missing = [c for c in categories if c not in present]
        if missing:
            raise UsageError(
                f"--category {', '.join(missing)}: not in {dataset.name}",
                hint="categories there: " + ", ".join(present),
            )
        present = [c for c in present if c in categories]
    out = {}
    for category in present:
        chosen = [p for p in dataset.prompts if p.category == category]
        out[category] = chosen[:per_category] if per_category else chosen
    return out
