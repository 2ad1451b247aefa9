"""Mutation testing of the decision modules with cosmic-ray: kill rate per module and the surviving mutants.

`tests/mutation/run [MODULE...]` (this module's `main`) copies the checkout (tracked and untracked, not ignored
files) into a temporary folder, since cosmic-ray mutates the file on disk, and for each module of
tests/mutation/config.toml makes a cosmic-ray session whose test command runs only that module's covering unit
test files. Operators that only add noise are left out (`EXCLUDED_OPERATORS`); mutants in the config's ignore list
(each a truly equivalent mutant, with its reason) are skipped. The kill rate is killed / (killed + survived).
Every job runs under `nice -n 19`, one mutant at a time, each with a timeout derived from the baseline run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_name("config.toml")

#: Operators that make noise rather than a mutant a test should catch: bit and shift operators (and `|` of type
#: unions), exotic arithmetic swaps, identity for equality, comparisons turned sideways (`==` to `<`), variable
#: shuffles, removed decorators (a dataclass without @dataclass fails everything, at the cost of a run).
#: What stays: a limit moved (numbers, `<` to `<=`), a condition negated or dropped (`not`, `and`/`or`, `==` to
#: `!=`, `<` to `>=`), arithmetic and aggregation changed (`+`/`-`, `*`/`/`, a loop that never runs), a handler
#: dropped (exception replacer), a flag flipped (True/False), break/continue swapped.
EXCLUDED_OPERATORS = (
    r"core/ReplaceBinaryOperator_\w+_(Pow|RShift|LShift|BitOr|BitAnd|BitXor|Mod|FloorDiv)$",
    r"core/ReplaceBinaryOperator_(Pow|RShift|LShift|BitOr|BitAnd|BitXor)_\w+$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq)_(Lt|LtE|Gt|GtE)$",
    r"core/ReplaceComparisonOperator_(Lt|LtE|Gt|GtE)_(Eq|NotEq)$",
    r"core/ReplaceComparisonOperator_(Lt_Gt|Gt_Lt|LtE_GtE|GtE_LtE)$",
    r"core/ReplaceUnaryOperator_(UAdd_\w+|\w+_Invert|Invert_\w+|USub_Not)$",
    r"core/Variable(Inserter|Replacer)$",
    r"core/RemoveDecorator$",
)


@dataclass(frozen=True)
class Ignored:
    """An equivalent mutant: its module, operator and the source line it mutates, and why no test can kill it; with
    `to`, only the mutant that turns the line into that text (one of several an operator makes of one line)."""

    module: str
    operator: str
    line: str
    reason: str
    to: str | None = None

    def matches(self, module: str, operator: str, line: str, mutated: str | None = None) -> bool:
        """Whether this entry names that mutant (lines compared without their indentation)."""
        same = self.module == module and self.operator == operator and self.line.strip() == line.strip()
        return same and (self.to is None or (mutated is not None and self.to.strip() == mutated.strip()))


@dataclass
class ModuleResult:
    """One module's session: counts, survivors (line, operator, diff), ignored count and run time."""

    module: str
    killed: int = 0
    survived: list[tuple[int, str, str]] = field(default_factory=list)
    ignored: int = 0
    timeouts: int = 0
    incompetent: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float | None:
        """Killed share of the judged mutants (killed + survived); None when there were none."""
        judged = self.killed + len(self.survived)
        return self.killed / judged if judged else None


def load_config(path: Path = CONFIG) -> tuple[dict[str, list[str]], list[Ignored]]:
    """The modules with their covering test files, and the ignore list; every ignore entry must give a reason."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    modules = {name: list(spec["tests"]) for name, spec in data.get("modules", {}).items()}
    ignored = []
    for entry in data.get("ignore", []):
        if not str(entry.get("reason", "")).strip():
            raise ValueError(f"ignore entry {entry} has no reason")
        if entry["module"] not in modules:
            raise ValueError(f"ignore entry {entry} names a module that is not configured")
        ignored.append(Ignored(entry["module"], entry["operator"], entry["line"], entry["reason"], entry.get("to")))
    return modules, ignored


def excluded(operator: str) -> bool:
    """Whether `operator` is one of the noise operators left out of every session."""
    return any(re.match(pattern, operator) for pattern in EXCLUDED_OPERATORS)


def copy_checkout(src: Path, dest: Path) -> None:
    """The files git would commit (tracked and untracked, not ignored) into `dest`; the venvs and the shared
    folder beside the checkout are linked, not copied."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = src / rel
        if source.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name in (".venv", ".venv-checkov"):
        if (src / name).exists():
            (dest / name).symlink_to(src / name)


def session_command(python: str, tests: Sequence[str]) -> list[str]:
    """The covering tests, stopping at the first failure, in one process (no xdist workers, no cache writes)."""
    return [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *tests]


def cosmic_config(module: str, command: Sequence[str], timeout: float) -> str:
    """A cosmic-ray session config for one module."""
    return "\n".join(
        [
            "[cosmic-ray]",
            f"module-path = {json.dumps(module)}",
            f"timeout = {timeout:.0f}",
            "excluded-modules = []",
            f"test-command = {json.dumps(shlex.join(command))}",
            "",
            "[cosmic-ray.distributor]",
            'name = "local"',
            "",
        ]
    )


def skip_unwanted(db_path: Path, workdir: Path, module: str, ignored: Iterable[Ignored]) -> int:
    """Mark noise operators and ignored mutants as skipped in the session; returns how many were ignored."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    entries = [i for i in ignored if i.module == module and i.to is None]  # those with `to` are matched on the diff
    lines = (workdir / module).read_text(encoding="utf-8").splitlines()
    count = 0
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            [mutation] = item.mutations
            line = lines[mutation.start_pos[0] - 1]
            if excluded(mutation.operator_name):
                why = "excluded operator"
            elif any(e.matches(module, mutation.operator_name, line) for e in entries):
                why, count = "ignored: equivalent", count + 1
            else:
                continue
            db.set_result(item.job_id, WorkResult(output=why, worker_outcome=WorkerOutcome.SKIPPED))
    return count


def collect(db_path: Path, module: str, result: ModuleResult, ignored: Sequence[Ignored] = ()) -> None:
    """Read the finished session into `result`; a survivor an ignore entry with `to` names counts as ignored."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    with use_db(str(db_path), WorkDB.Mode.open) as db:
        items = {item.job_id: item for item in db.work_items}
        for job_id, res in db.results:
            if res.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            [mutation] = items[job_id].mutations
            if res.test_outcome == TestOutcome.KILLED:
                result.killed += 1
                result.timeouts += res.output == "timeout"
            elif res.test_outcome == TestOutcome.SURVIVED:
                changed = mutated_lines(res.diff or "")
                before = next((d[1:] for d in changed if d.startswith("-")), "")
                after = next((d[1:] for d in changed if d.startswith("+")), "")
                if any(i.matches(module, mutation.operator_name, before, after) for i in ignored if i.to):
                    result.ignored += 1
                    continue
                result.survived.append((mutation.start_pos[0], mutation.operator_name, res.diff or ""))
            else:
                result.incompetent += 1
    result.survived.sort()


def run_module(workdir: Path, module: str, tests: Sequence[str], ignored: Sequence[Ignored]) -> ModuleResult:
    """One module's mutation session in `workdir` (the copy); the baseline must pass first."""
    started = time.monotonic()
    missing = [t for t in tests if not (workdir / t).exists()]
    if missing:
        print(f"{module}: left out of its tests (not found): {', '.join(missing)}", flush=True)
    command = session_command(sys.executable, [t for t in tests if t not in missing])
    nice = ["nice", "-n", "19"]
    baseline = subprocess.run(nice + command, cwd=workdir, capture_output=True, text=True, timeout=900, check=False)
    if baseline.returncode != 0:
        raise RuntimeError(f"{module}: the covering tests fail unmutated:\n{baseline.stdout[-3000:]}")
    took = time.monotonic() - started
    # Generous: a loaded machine must not turn a slow survivor into a "killed" timeout.
    timeout = max(60.0, 10 * took)
    session = workdir / ".mutation" / module.replace("/", "_")
    session.mkdir(parents=True, exist_ok=True)
    cfg, db = session / "cosmic-ray.toml", session / "session.sqlite"
    cfg.write_text(cosmic_config(module, command, timeout), encoding="utf-8")
    cosmic = [str(Path(sys.executable).with_name("cosmic-ray"))]
    subprocess.run([*cosmic, "init", str(cfg), str(db)], cwd=workdir, check=True, timeout=300)
    result = ModuleResult(module)
    result.ignored = skip_unwanted(db, workdir, module, ignored)
    subprocess.run([*nice, *cosmic, "exec", str(cfg), str(db)], cwd=workdir, check=True, timeout=6 * 3600)
    collect(db, module, result, ignored)
    result.seconds = time.monotonic() - started
    return result


def mutated_lines(diff: str) -> list[str]:
    """The removed and added lines of a mutant's diff."""
    return [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def report(result: ModuleResult) -> str:
    """The module's line and its survivors, as printed."""
    rate = "n/a" if result.rate is None else f"{100 * result.rate:.1f} %"
    judged = result.killed + len(result.survived)
    out = [
        f"{result.module}: kill rate {rate} ({result.killed}/{judged} killed, {len(result.survived)} survived, "
        f"{result.ignored} ignored as equivalent, {result.timeouts} timeouts, {result.incompetent} incompetent) "
        f"in {result.seconds:.0f} s"
    ]
    for line, operator, diff in result.survived:
        out.append(f"  survived {result.module}:{line} {operator}")
        out += [f"    {d}" for d in mutated_lines(diff)]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """tests/mutation/run [MODULE...]: mutation-test the named modules (all configured ones by default)."""
    parser = argparse.ArgumentParser(prog="tests/mutation/run", description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="module paths as in config.toml (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--fail-under", type=float, default=None, help="exit 1 if a module's kill rate is lower (%%)")
    args = parser.parse_args(argv)
    modules, ignored = load_config()
    unknown = [m for m in args.modules if m not in modules]
    if unknown:
        print(f"error: not configured in {CONFIG.relative_to(REPO_ROOT)}: {', '.join(unknown)}", file=sys.stderr)
        print("hint: add the module and its covering test files to [modules]", file=sys.stderr)
        return 2
    results: list[ModuleResult] = []
    with tempfile.TemporaryDirectory(prefix="k3deploy-mutation-") as tmp:
        workdir = Path(tmp) / "repo"
        copy_checkout(REPO_ROOT, workdir)
        env_note = os.environ.get("K3DEPLOY_MUTATION_NOTE")
        if env_note:
            print(env_note)
        for module in args.modules or list(modules):
            result = run_module(workdir, module, modules[module], ignored)
            results.append(result)
            print(report(result), flush=True)
    print("\nsummary:")
    for r in results:
        rate = "n/a" if r.rate is None else f"{100 * r.rate:5.1f} %"
        print(f"  {rate}  {r.module}  ({len(r.survived)} survived, {r.seconds:.0f} s)")
    if args.json:
        payload: list[dict[str, Any]] = [
            {
                "module": r.module,
                "killed": r.killed,
                "survived": len(r.survived),
                "ignored": r.ignored,
                "timeouts": r.timeouts,
                "rate": r.rate,
                "seconds": round(r.seconds, 1),
                "survivors": [{"line": line, "operator": op, "diff": mutated_lines(d)} for line, op, d in r.survived],
            }
            for r in results
        ]
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.fail_under is not None and any(r.rate is not None and 100 * r.rate < args.fail_under for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
