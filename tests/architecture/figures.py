"""The import graph's figures, printed by `python -m tests.architecture.figures [--strict]` and held by
tests/architecture/test_figures.py: module import circles, arrows back up the stage order, uses of `Any` under
k3deploy/, and (with --strict, which runs mypy) the `mypy --strict` error count."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize

from tests.architecture.code import PACKAGE, imported_modules, module_name, unit_of
from tests.conftest import REPO_ROOT

#: The stages from the bottom up: a package may import its own stage's foundation and any stage below it. Stages
#: on one line are peers (they import neither way, counted apart as sideways); the foundation is shared by all.
FOUNDATION = {
    "k3deploy",
    "kobject",
    "errors",
    "duration",
    "redact",
    "__version__",
    "lws",
    "kueue",
    "pod_volumes",
    "fileio",
    "console",
    "rich_console",
    "reporter",
    "live_table",
    "prompts",
    "pod_scripts",
    "traffic_gate",
}
STAGES: list[set[str]] = [
    {"kube"},
    {"net"},
    {"profile"},
    {"report"},
    {"measure"},
    {"pin"},
    {"stage"},
    {"observe"},
    {"render"},
    {"preflight"},
    {"fault_guard"},
    {"rollout"},
    {"smoke", "bench"},
    {"targets"},
    {"gating"},
    {"pipeline"},
    {"cli"},
    {"__main__"},
]


def rank(unit: str) -> int:
    """The stage of a first-level package or module: -1 for the foundation."""
    if unit in FOUNDATION:
        return -1
    for index, stage in enumerate(STAGES):
        if unit in stage:
            return index
    raise KeyError(f"{unit} is in no stage of tests/architecture/figures.py")


def _known(name: str, modules: set[str]) -> str | None:
    """The k3deploy module `name` is, or the package it names a member of."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_graph() -> dict[str, set[str]]:
    """module -> the k3deploy modules it imports, at any depth, type-only imports included (a circle through an
    `if TYPE_CHECKING:` import is still one a reader must hold in their head)."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        out = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = imported_modules(node)
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "k3deploy":
                names += [f"{node.module}.{alias.name}" for alias in node.names]  # `from pkg import submodule`
            for name in names:
                if name.startswith("k3deploy.") and (found := _known(name, modules)) and found != module:
                    out.add(found)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def arrows(graph: dict[str, set[str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(back up, sideways): package-level arrows to a higher stage, and between two peers of one stage."""
    up, side = set(), set()
    for module, imported in graph.items():
        for other in imported:
            a, b = unit_of(module), unit_of(other)
            if a == b or (a in FOUNDATION and b in FOUNDATION):
                continue
            if rank(a) < rank(b):
                up.add((a, b))
            elif rank(a) == rank(b):
                side.add((a, b))
    return up, side


def any_count() -> int:
    """Uses of the name `Any` in k3deploy/'s code (imports included; comments and strings not)."""
    return sum(
        1
        for path in PACKAGE.rglob("*.py")
        for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        if token.type == tokenize.NAME and token.string == "Any"
    )


def strict_errors() -> int:
    """`mypy --strict k3deploy`'s error count (the project's own mypy settings otherwise)."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "k3deploy"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    match = re.search(r"Found (\d+) errors?", done.stdout)
    if match is None and "Success" not in done.stdout:
        raise RuntimeError(f"mypy said neither how many errors nor success:\n{done.stdout}{done.stderr}")
    return int(match.group(1)) if match else 0


def main() -> None:
    graph = module_graph()
    found = circles(graph)
    up, side = arrows(graph)
    print(f"import circles: {len(found)}")
    for group in found:
        print("  " + " <-> ".join(group))
    print(f"arrows back up: {len(up)}")
    for a, b in sorted(up):
        print(f"  {a} -> {b}")
    print(f"sideways arrows: {len(side)}")
    for a, b in sorted(side):
        print(f"  {a} -> {b}")
    print(f"Any under k3deploy/: {any_count()}")
    if "--strict" in sys.argv:
        print(f"mypy --strict errors: {strict_errors()}")


if __name__ == "__main__":
    main()
