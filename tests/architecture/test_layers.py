"""The layers: pure modules import no I/O library, `kubernetes` stays inside k3deploy/kube/, no module is over
500 lines or without a docstring, the layers import no cycle, a function-local import is a heavy optional one with a
reason, and no module keeps mutable state at module level."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from tests.architecture.code import (
    IO_LIBRARIES,
    PACKAGE,
    imported_modules,
    imported_roots,
    module_name,
    type_checking_lines,
    unit_of,
)
from tests.conftest import REPO_ROOT

PURE_MODULES = [
    "duration.py",
    "kobject.py",
    "kube/port.py",
    "profile/model.py",
    "profile/load.py",
    "profile/names.py",
    "profile/plan.py",
    "render/argv.py",
    "render/manifests.py",
    "render/templating.py",
    "report/model.py",
    "preflight/facts.py",
    "preflight/checks.py",
    "preflight/checks_node.py",
    "preflight/checks_cluster.py",
    "preflight/checks_pinning.py",
    "pin/oci.py",
    "pin/floating.py",
    "preflight/checks_storage.py",
    "render/features.py",
    "preflight/placement.py",
    "render/routing.py",
    "preflight/weight_cache.py",
    "render/network.py",
    "render/pod_security.py",
    "render/scan_skips.py",
    "render/serving_pods.py",
    "observe/allreduce.py",
    "preflight/checks_psa.py",
    "measure/sse.py",
    "prompts/__init__.py",
    "bench/datasets.py",
    "bench/figures.py",
    "bench/compare.py",
    "bench/series.py",
    "bench/latency.py",
    "bench/load.py",
    "measure/arrivals.py",
    "bench/html_report.py",
    "measure/metrics.py",
    "measure/per_request.py",
    "smoke/verdict.py",
    "smoke/headline.py",
    "targets/local/launch.py",
    "targets/local/checks.py",
    "targets/local/startup.py",
    "observe/promql.py",
    "observe/scope.py",
    "observe/dashboard.py",
    "observe/alerts.py",
    "observe/alert_rule.py",
    "observe/alerts_health.py",
    "observe/promql_health.py",
    "observe/watch_figures.py",
    "preflight/load_time.py",
    "stage/plan.py",
    "stage/record.py",
    "stage/throttle.py",
    "fault_guard/decide.py",
    "fault_guard/signals.py",
    "fault_guard/health.py",
    "pod_scripts/worker_alive.py",
    "render/guard.py",
    "profile/guard_spec.py",
]


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_imports_no_io(module: str) -> None:
    path = PACKAGE / module
    assert path.is_file(), f"pure module {module} is missing"
    assert imported_roots(path) & IO_LIBRARIES == set()


def test_only_kube_package_imports_kubernetes() -> None:
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if "kubernetes" in imported_roots(path) and path.parent.name != "kube"
    ]
    assert offenders == []


def test_no_module_over_500_lines() -> None:
    """The package's modules and the tests' alike."""
    files = [*PACKAGE.rglob("*.py"), *(REPO_ROOT / "tests").rglob("*.py")]
    long = {str(p.relative_to(REPO_ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}


def test_every_module_has_a_docstring() -> None:
    missing = [
        str(p.relative_to(REPO_ROOT))
        for p in PACKAGE.rglob("*.py")
        if ast.get_docstring(ast.parse(p.read_text())) is None
    ]
    assert missing == []


# -- package layering -------------------------------------------------------------------------------------------

#: Third-party modules heavy enough to import only where used, and never needed on some path (the local
#: target never loads `kubernetes`; NVML, torch, matplotlib and huggingface_hub exist only on some hosts or with an
#: extra (the Hub client only for `stage org/name@<commit>`); `render`
#: and `--help` never load an HTTP client, nor rich: they print plain lines).
HEAVY_OPTIONAL = {
    "rich",
    "httpx",
    "aiohttp",
    "tenacity",
    "kubernetes",
    "urllib3",
    "pynvml",
    "torch",
    "transformers",
    "tokenizers",
    "matplotlib",
    "uvloop",
    "numpy",
    "huggingface_hub",
}


#: Command modules register on the app at start-up; each command loads its stage only when it runs.
LAZY_COMMAND_PACKAGE = PACKAGE / "cli"


def package_graph() -> dict[tuple[str, str], list[str]]:
    """(from layer, to layer) -> where: every k3deploy import that runs, at any depth of a module."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = type_checking_lines(tree)
        source = unit_of(module_name(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in skip:
                for target in imported_modules(node):
                    if target.startswith("k3deploy.") and unit_of(target) != source:
                        edges.setdefault((source, unit_of(target)), []).append(
                            f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
                        )
    return edges


def _cycle(edges: dict[tuple[str, str], list[str]]) -> list[str]:
    """One cycle of the layer graph (as its edges with where each import is), or [] when there is none."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loop = [*stack[stack.index(nxt) :], nxt]
                return [f"{a} -> {b} ({edges[(a, b)][0]})" for a, b in itertools.pairwise(loop)]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_cycle_finder_sees_a_cycle() -> None:
    edges = {("profile", "render"): ["a.py:1"], ("render", "targets"): ["b.py:2"], ("targets", "profile"): ["c.py:3"]}
    assert _cycle(edges) == ["profile -> render (a.py:1)", "render -> targets (b.py:2)", "targets -> profile (c.py:3)"]
    assert _cycle({("cli", "render"): ["a.py:1"]}) == []


def test_no_package_import_cycles() -> None:
    """Packages form layers: an import cycle between two (even through a function-local import) is refused."""
    assert _cycle(package_graph()) == []


def _reasoned(lines: list[str], node: ast.Import | ast.ImportFrom) -> bool:
    """A comment ends the import's line, or stands on the line above its block of imports."""
    if "#" in lines[node.lineno - 1]:
        return True
    above = node.lineno - 2
    while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def function_local_imports() -> list[tuple[Path, ast.Import | ast.ImportFrom]]:
    """Every import inside a function body (outside `if TYPE_CHECKING:`)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = type_checking_lines(tree)
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [
                    (path, node)
                    for node in ast.walk(func)
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in skip
                ]
    return found


def _heavy(module: str) -> bool:
    """A heavy optional dependency, or a k3deploy module that imports one at its top (kube/bounded.py)."""
    if module.split(".")[0] in HEAVY_OPTIONAL:
        return True
    path = REPO_ROOT / (module.replace(".", "/") + ".py")
    if not module.startswith("k3deploy.") or not path.is_file():
        return False
    top = ast.parse(path.read_text(encoding="utf-8")).body
    return any(
        name.split(".")[0] in HEAVY_OPTIONAL
        for node in top
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in imported_modules(node)
    )


def test_function_local_imports_are_heavy_optional_dependencies_with_a_reason() -> None:
    """Imports go at the top of a module; inside a function only a heavy optional dependency (or a command's own
    stage, in cli/), each with a one-line comment saying why."""
    offenders = []
    for path, node in function_local_imports():
        modules = imported_modules(node) or ["(relative)"]
        lines = path.read_text(encoding="utf-8").splitlines()
        allowed = all(_heavy(module) for module in modules) or LAZY_COMMAND_PACKAGE in path.parents
        if not allowed or not _reasoned(lines, node):
            offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert offenders == []


# -- no per-process mutable state in a module ------------------------------------------------------------------

#: A call that makes a mutable container.
MUTABLE_FACTORIES = {"list", "dict", "set", "defaultdict", "OrderedDict", "Counter", "deque", "bytearray"}


#: Methods that change a list, dict, set or deque in place.
MUTATORS = {
    "append",
    "appendleft",
    "extend",
    "extendleft",
    "insert",
    "remove",
    "pop",
    "popitem",
    "clear",
    "update",
    "add",
    "discard",
    "setdefault",
    "sort",
    "reverse",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
}


#: Module-level containers a function may change, each with why; none may be under k3deploy/kube/.
MUTABLE_MODULE_STATE = {
    ("k3deploy/cli/__init__.py", "_TERMINATED"): "a SIGTERM is delivered to the process: its handler records it "
    "where the exit code (143, not 130) is chosen",
}


def _module_containers(tree: ast.Module) -> dict[str, int]:
    """Module-level names bound to a mutable container (a display, a comprehension, a factory call): line of each."""
    out = {}
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        value = node.value
        func = value.func if isinstance(value, ast.Call) else None
        factory = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        mutable = isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
        if mutable or factory in MUTABLE_FACTORIES:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id: node.lineno for t in targets if isinstance(t, ast.Name)}
    return out


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names (bare, or as `module.NAME`) that a function of `tree` changes in place, rebinds globally or indexes into."""

    def named(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return expr.id
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            return expr.attr
        return None

    out: set[str] = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Global):
                out.update(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                out.add(named(node.func.value) or "")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                out |= {named(t.value) or "" for t in targets if isinstance(t, ast.Subscript)}
                if isinstance(node, ast.AugAssign):
                    out.add(named(node.target) or "")
    return out - {""}


def test_no_module_keeps_mutable_state_in_a_module_level_container() -> None:
    """kube/bounded.py once kept the last answer read in a module-level list (so one connection's error could quote
    another's answer) and kube/exec_bound.py a plugin's timeout (for whichever `loading` came next): state lives in
    the object or the call that owns it. A module-level container is an ALL_CAPS constant no function changes;
    the few that are per-process by nature are listed with why, none under k3deploy/kube/."""
    trees = {
        str(path.relative_to(REPO_ROOT)): ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.rglob("*.py")
    }
    mutated = set().union(*(_mutated_names(tree) for tree in trees.values()))
    offenders = []
    for where, tree in sorted(trees.items()):
        for name, line in _module_containers(tree).items():
            constant = name == "__all__" or name.lstrip("_").isupper()
            if (not constant or name in mutated) and (where, name) not in MUTABLE_MODULE_STATE:
                offenders.append(f"{where}:{line} {name}")
    assert offenders == []
    assert all(not where.startswith("k3deploy/kube/") for where, _ in MUTABLE_MODULE_STATE)
    assert all(name in _module_containers(trees[where]) for where, name in MUTABLE_MODULE_STATE)  # none stale
