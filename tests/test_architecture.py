"""The dependency rule: pure modules import no I/O library, and `kubernetes` stays inside k3deploy/kube/."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "k3deploy"
PURE_MODULES = [
    "duration.py",
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
    "preflight/checks_psa.py",
    "rollout/readiness.py",
    "rollout/order.py",
    "rollout/surge.py",
    "rollout/currency.py",
    "rollout/groups.py",
    "rollout/colours.py",
    "rollout/judge.py",
    "rollout/plan.py",
    "smoke/sse.py",
    "bench/datasets.py",
    "bench/figures.py",
    "bench/compare.py",
    "bench/series.py",
    "bench/svg.py",
    "bench/latency.py",
    "bench/load.py",
    "bench/html_report.py",
    "smoke/metrics.py",
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
]
IO_LIBRARIES = {
    "kubernetes",
    "httpx",
    "aiohttp",
    "uvloop",
    "pynvml",
    "rich",
    "subprocess",
    "socket",
    "urllib3",
    "requests",
    "typer",
}


def imported_roots(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, at any depth of the file."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


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
    long = {
        str(p.relative_to(REPO_ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500
    }
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
#: target never loads `kubernetes`; NVML, torch and matplotlib exist only on some hosts or with an extra).
HEAVY_OPTIONAL = {
    "kubernetes",
    "urllib3",
    "pynvml",
    "torch",
    "transformers",
    "tokenizers",
    "matplotlib",
    "uvloop",
    "numpy",
}
#: Command modules register on the app at start-up; each command loads its stage only when it runs.
LAZY_COMMAND_PACKAGE = PACKAGE / "cli"


def _unit(module: str) -> str:
    """The layer a module belongs to: its first-level package (`k3deploy.rollout.wait` -> rollout), or itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside `if TYPE_CHECKING:` blocks: imports for annotations only, never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    if node.module == "k3deploy":  # `from k3deploy import pipeline` imports the module k3deploy.pipeline
        return [f"k3deploy.{alias.name}" for alias in node.names]
    return [node.module]


def package_graph() -> dict[tuple[str, str], list[str]]:
    """(from layer, to layer) -> where: every k3deploy import that runs, at any depth of a module."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_lines(tree)
        source = _unit(_module_name(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in skip:
                for target in _imported_modules(node):
                    if target.startswith("k3deploy.") and _unit(target) != source:
                        edges.setdefault((source, _unit(target)), []).append(
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
        skip = _type_checking_lines(tree)
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
        for name in _imported_modules(node)
    )


def test_function_local_imports_are_heavy_optional_dependencies_with_a_reason() -> None:
    """Imports go at the top of a module; inside a function only a heavy optional dependency (or a command's own
    stage, in cli/), each with a one-line comment saying why."""
    offenders = []
    for path, node in function_local_imports():
        modules = _imported_modules(node) or ["(relative)"]
        lines = path.read_text(encoding="utf-8").splitlines()
        allowed = all(_heavy(module) for module in modules) or LAZY_COMMAND_PACKAGE in path.parents
        if not allowed or not _reasoned(lines, node):
            offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert offenders == []


def test_only_targets_and_profile_loading_ask_which_target_a_profile_names() -> None:
    """Everything that differs between targets is behind targets/base.py: no `profile.target == ...` elsewhere, and
    no reaching for a target's extras by name (`getattr(target, "record_smoke")`)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        inside = path.relative_to(PACKAGE).parts[0] in ("targets", "profile")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # A target's name compared with a string (`profile.target == "local"`); `row.target is None` is no such test.
            if (
                isinstance(node, ast.Compare)
                and not inside
                and isinstance(node.left, ast.Attribute)
                and node.left.attr == "target"
                and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in node.comparators)
            ):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: compares .target")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in ("record_smoke", "last_diffs", "last_applied", "locked", "diagnosis")
            ):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: getattr {node.args[1].value!r}")
    assert offenders == []


# -- the rollout's seams: plan (pure), runner and targets (I/O), pipeline (every smoke) -------------------------


def _k3deploy_imports(path: Path) -> list[str]:
    """Every k3deploy module `path` imports, at any depth."""
    return [
        module
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for module in _imported_modules(node)
        if module.startswith("k3deploy.")
    ]


def _module_path(module: str) -> Path:
    base = REPO_ROOT / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _reached(module: str) -> set[str]:
    """Every k3deploy module `module` reaches by import, itself included."""
    seen, todo = {module}, [module]
    while todo:
        path = _module_path(todo.pop())
        for name in _k3deploy_imports(path) if path.is_file() else []:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_the_rollout_plan_reaches_no_io_through_what_it_imports() -> None:
    """rollout/plan.py decides the steps from data alone: no module it reaches, however deep, imports an I/O
    library, the cluster layer (kube/) or the runner."""
    reached = _reached("k3deploy.rollout.plan")
    assert "k3deploy.render.manifests" in reached  # the rule follows imports
    offenders = {
        name: sorted(imported_roots(_module_path(name)) & IO_LIBRARIES)
        for name in sorted(reached)
        if _module_path(name).is_file() and imported_roots(_module_path(name)) & IO_LIBRARIES
    }
    assert offenders == {}
    assert not {n for n in reached if n.startswith(("k3deploy.kube", "k3deploy.rollout.runner", "k3deploy.targets"))}


def _target_privates() -> set[str]:
    """The private attributes and methods of the Target classes (`self._x` assigned or `def _x` in targets/)."""
    names: set[str] = set()
    for path in (PACKAGE / "targets").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and inner.name.startswith("_"):
                        names.add(inner.name)
                    if (
                        isinstance(inner, ast.Attribute)
                        and isinstance(inner.ctx, ast.Store)
                        and isinstance(inner.value, ast.Name)
                        and inner.value.id == "self"
                        and inner.attr.startswith("_")
                    ):
                        names.add(inner.attr)
    return {name for name in names if not name.startswith("__")}


def test_nothing_outside_targets_reads_or_writes_a_targets_private_attributes() -> None:
    """A Target is an I/O port: callers use its methods; what a later step needs travels in the plan, never in a
    target's private fields (`_held_lws`, `_applied`, `_waiter` once were)."""
    private = _target_privates()
    assert {"_api", "_waiter"} <= private  # the rule sees the Kubernetes target's own
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "targets":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = None
            if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                named = node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
            ):
                named = str(node.args[1].value)
            if named in private:
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {named}")
    assert offenders == []


def test_rollout_modules_take_no_target() -> None:
    """rollout/ is what the targets use, never the other way round: no rollout module imports k3deploy.targets or
    takes a target as a parameter (upgrade.py and bluegreen.py once took it as Any); each gets the API, the
    namespace, the options it needs."""
    offenders = []
    for path in (PACKAGE / "rollout").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [
            f"{path.relative_to(REPO_ROOT)}: imports {module}"
            for module in _k3deploy_imports(path)
            if module.startswith("k3deploy.targets")
        ]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                # A waited object is a "target" too (rollout/judge.py): only a Target, or an untyped Any, counts.
                offenders += [
                    f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.name}({a.arg})"
                    for a in arguments
                    if a.arg == "target" and (a.annotation is None or "dict" not in ast.unparse(a.annotation))
                ]
    assert offenders == []


def test_every_smoke_of_up_runs_in_the_pipeline() -> None:
    """The final smoke and each new group's gate are run and judged by k3deploy/pipeline.py: no target or rollout
    module runs a smoke itself (the in-cluster Job's report is read there, and judged by the pipeline)."""
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for package in ("targets", "rollout")
        for path in (PACKAGE / package).rglob("*.py")
        if "k3deploy.smoke.runner" in _k3deploy_imports(path)
    ]
    assert offenders == []
