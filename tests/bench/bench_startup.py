"""Start-up cost: the CPU seconds of `k3deploy render` against `helm template` of the same objects as a static chart,
and of `k3deploy --help` against its 0.3 s budget. Prints the figures and the ratios; asserts nothing.

CPU time (user + system of the child process, from `os.wait4`), not wall time, so a loaded machine moves it less.
Every command runs with its modules' bytecode compiled, as an installed k3deploy runs (pip compiles a wheel's modules
as it installs it, PYTHONDONTWRITEBYTECODE or not): in a checkout under PYTHONDONTWRITEBYTECODE, Python would compile
k3deploy's ~60 modules on every run. The bytecode goes to a temporary PYTHONPYCACHEPREFIX, written by one warm-up run
of each command; nothing is written beside the sources.
Each command runs `--rounds` times and the smallest figure counts (the one least disturbed by other work). helm is
the venv's or PATH's (`bash .ci/helm` builds it from the Go module proxy); without one the recorded
`helm template` figure below stands in, and the output says so.

`--floor` also prints what the libraries `render` needs cost to import, one added at a time (typer parses options
through pydantic): no `render` of k3deploy's can cost less than their sum. Then the bare floor: what a `render` with
no CLI library but argparse and no profile validation would import before it does any work, and what one render's
work costs once everything is imported (the bare floor plus that is the least a `render` could cost).

    python -m tests.bench.bench_startup [--rounds 7] [--floor]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT, cli_env, venv_tool

PROFILE = "kimi-k3-gb300-tp16"
#: `helm template` of the 16 objects as a static chart, measured when start-up was first budgeted (CPU seconds).
RECORDED_HELM_S = 0.046
#: What `render` may cost: within this many times `helm template`.
RENDER_BUDGET_RATIO = 2.0
#: What `--help` may cost, in CPU seconds.
HELP_BUDGET_S = 0.3


def cpu_seconds(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """User + system CPU seconds of one run of `argv` (its output discarded); raises when it fails."""
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=sink, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def best(argv: list[str], rounds: int, **kw: object) -> float:
    """The smallest CPU time over `rounds` runs, after one that writes the bytecode (see compiled_env)."""
    cpu_seconds(argv, **kw)  # type: ignore[arg-type]
    return min(cpu_seconds(argv, **kw) for _ in range(rounds))  # type: ignore[arg-type]


def compiled_env(env: dict[str, str], pycache: Path) -> dict[str, str]:
    """`env` where Python reads and writes every module's bytecode under `pycache`, as an installed package has it."""
    compiled = {**env, "PYTHONPYCACHEPREFIX": str(pycache)}
    compiled.pop("PYTHONDONTWRITEBYTECODE", None)
    return compiled


def _literal(text: str) -> str:
    """`text` as a Go template that prints it unchanged: its `{{`/`}}` (the PrometheusRule's alert templates) quoted."""
    return re.sub(r"\{\{|\}\}", lambda m: "{{`" + m.group(0) + "`}}", text)


def _key(obj: dict) -> str:
    return yaml.safe_dump(obj, sort_keys=True)


def static_chart(into: Path) -> int:
    """A chart whose templates are the rendered objects: what `helm template` re-emits unchanged. Returns the count."""
    k3deploy = [sys.executable, "-m", "k3deploy"]
    out = into / "rendered"
    subprocess.run(
        [*k3deploy, "render", "-p", PROFILE, "-o", str(out)],
        env=cli_env(),
        check=True,
        timeout=120,
        capture_output=True,
    )
    templates = into / "chart" / "templates"
    templates.mkdir(parents=True)
    (into / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: k3deploy-static\nversion: 0.1.0\n")
    objects = sorted(p for p in out.glob("*.yaml") if p.name != "kustomization.yaml")
    for path in objects:
        (templates / path.name).write_text(_literal(path.read_text()))
    return len(objects)


#: The imports `render` cannot do without, each line adding to the ones before it (what `--floor` prints). rich and
#: the Grafana SDK are not among them: `render` prints plain lines and writes the dashboard's JSON itself.
FLOOR = (
    ("the interpreter", "pass"),
    ("+ typer, with the pydantic it coerces options through", "import typer, typer.main, typer._adapters"),
    ("+ PyYAML (libyaml)", "import yaml"),
    ("+ jinja2", "import jinja2"),
    ("+ the profile's pydantic models", "import k3deploy.profile.model"),
)
#: The least any `render` built on the templates and YAML could import: no CLI library but the standard library's,
#: no profile validation at all. What is left of 2x helm under it is all the time there is to parse, validate,
#: render and write.
BARE_FLOOR = (
    ("the interpreter", "pass"),
    ("+ PyYAML (libyaml)", "import yaml"),
    ("+ jinja2", "import jinja2"),
    ("+ argparse, in place of typer", "import argparse"),
)


#: One render's work with every module already imported: the profile loaded and validated, 16 objects rendered and
#: written out as one stream. Printed by a child so the figure is its CPU time alone.
WARM_WORK = f"""
import time
from k3deploy.profile import load_profile
from k3deploy.targets import render_for
render_for(load_profile({PROFILE!r}, [])).stream
start = time.process_time()
render_for(load_profile({PROFILE!r}, [])).stream
print(time.process_time() - start)
"""


def warm_work(rounds: int, env: dict[str, str]) -> float:
    """The smallest CPU seconds of WARM_WORK's second render over `rounds` children."""
    return min(
        float(
            subprocess.run(
                [sys.executable, "-c", WARM_WORK],
                env=env,
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
        )
        for _ in range(rounds)
    )


def floor(rounds: int, env: dict[str, str], helm_s: float, lines: tuple[tuple[str, str], ...], label: str) -> None:
    """Print the CPU seconds of importing `lines`' libraries, one more per line, and each against helm's figure."""
    code: list[str] = []
    for what, line in lines:
        code.append(line)
        seconds = best([sys.executable, "-c", "; ".join(code)], rounds, env=env, cwd=REPO_ROOT)
        print(f"{label:<16} {seconds:.3f} s CPU = {seconds / helm_s:.2f}x helm  {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--floor", action="store_true", help="also print what render's libraries cost to import")
    args = parser.parse_args()
    k3deploy = [sys.executable, "-m", "k3deploy"]
    helm = venv_tool("helm")
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-startup-") as tmp:
        env = compiled_env(cli_env(), Path(tmp) / "pycache")
        render_s = best([*k3deploy, "render", "-p", PROFILE], args.rounds, env=env, cwd=REPO_ROOT)
        help_s = best([*k3deploy, "--help"], args.rounds, env=env, cwd=REPO_ROOT)
        count = static_chart(Path(tmp))
        if helm:
            chart = str(Path(tmp) / "chart")
            emitted = subprocess.run([helm, "template", "k3deploy", chart], capture_output=True, text=True, check=True)
            rendered = [yaml.safe_load(p.read_text()) for p in sorted((Path(tmp) / "rendered").glob("[0-9]*.yaml"))]
            # helm emits in its own kind order (releaseutil InstallOrder): compared as sets of objects.
            if sorted(map(_key, filter(None, yaml.safe_load_all(emitted.stdout)))) != sorted(map(_key, rendered)):
                raise SystemExit("helm template did not emit the rendered objects unchanged")
            helm_s = best([helm, "template", "k3deploy", chart], args.rounds)
            yardstick = f"helm template ({helm}), {count} objects as a static chart"
        else:
            helm_s = RECORDED_HELM_S
            yardstick = (
                f"no helm here (bash .ci/helm builds it): the recorded helm template figure, {RECORDED_HELM_S} s"
            )
    print(f"render:          {render_s:.3f} s CPU  ({count} objects)")
    print(f"helm template:   {helm_s:.3f} s CPU  [{yardstick}]")
    print(f"render / helm:   {render_s / helm_s:.2f}x  (budget {RENDER_BUDGET_RATIO:g}x)")
    print(f"--help:          {help_s:.3f} s CPU")
    print(f"--help / budget: {help_s / HELP_BUDGET_S:.2f}  (budget {HELP_BUDGET_S} s)")
    if args.floor:
        with tempfile.TemporaryDirectory(prefix="k3deploy-bench-startup-") as tmp:
            env = compiled_env(cli_env(), Path(tmp))
            floor(args.rounds, env, helm_s, FLOOR, "floor:")
            floor(args.rounds, env, helm_s, BARE_FLOOR, "bare floor:")
            work = warm_work(args.rounds, env)
            print(f"{'warm work:':<16} {work:.3f} s CPU = {work / helm_s:.2f}x helm  one render once all is imported")


if __name__ == "__main__":
    main()
