"""The dependency rule: pure modules import no I/O library, and `kubernetes` stays inside k3deploy/kube/."""

from __future__ import annotations

import ast
import inspect
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
    "render/serving_pods.py",
    "observe/allreduce.py",
    "preflight/checks_psa.py",
    "rollout/readiness.py",
    "rollout/order.py",
    "rollout/surge.py",
    "rollout/currency.py",
    "rollout/groups.py",
    "rollout/colours.py",
    "rollout/judge.py",
    "rollout/plan.py",
    "rollout/steps.py",
    "smoke/sse.py",
    "prompts/__init__.py",
    "bench/datasets.py",
    "bench/figures.py",
    "bench/compare.py",
    "bench/series.py",
    "bench/latency.py",
    "bench/load.py",
    "measure/arrivals.py",
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
#: target never loads `kubernetes`; NVML, torch and matplotlib exist only on some hosts or with an extra; `render`
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
                and node.args[1].value in ("record_smoke", "last_diffs", "last_applied", "locked", "diagnosis", "api")
            ):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: getattr {node.args[1].value!r}")
    assert offenders == []


# -- the rendered set -------------------------------------------------------------------------------------------

#: Where the set is rendered: `render` itself (through the Kubernetes target's rendering alone), preflight when its
#: caller passed no set (`preflight --node/--cluster`), and the Kubernetes target (targets/kubernetes.py `_objects`)
#: for what no command's set covers (below).
RENDERERS = {
    "k3deploy/render/manifests.py",
    "k3deploy/render/write.py",
    "k3deploy/targets/kubernetes_render.py",
    "k3deploy/preflight/run.py",
    "k3deploy/targets/kubernetes.py",
}
#: The Kubernetes target's methods that render afresh: the plan's set for a profile the command did not render (the
#: node-preflight Job pinned to the nodes found), and `status`. Every other method, the rollback's and `down`'s
#: plans among them, takes the set the command rendered (targets/base.py).
KUBERNETES_RENDERS_IN = {"_rollout_objects", "status"}


def _calls(path: Path, names: tuple[str, ...], module: str = "k3deploy.render.manifests") -> list[ast.Call]:
    """Calls of `module`'s `names` in `path`, under whatever name it imports them (`build as render`), or in
    `module` itself; a function of the same name defined elsewhere (rollout/plan.py `build`) is not one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = path == PACKAGE / (module.removeprefix("k3deploy.").replace(".", "/") + ".py")
    bound = set(names) if own else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == module:
            bound |= {alias.asname or alias.name for alias in node.names if alias.name in names}
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in bound
    ]


def test_the_set_is_rendered_only_where_a_command_renders_it_once() -> None:
    """Everything else takes the rendered objects as an argument (preflight's checks and its access review, which is
    derived from them; the rollout's questions, lock, plan, smokes, rollback and removal): a new call of `build` or
    `rendered_objects` elsewhere is a second render of the same set (tests/realk8s/rollout/test_render_once.py counts
    them per command)."""
    callers = {
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if _calls(path, ("build", "rendered_objects"))
    }
    assert callers <= RENDERERS, callers - RENDERERS
    assert "k3deploy/preflight/checks_cluster.py" not in callers
    target = PACKAGE / "targets" / "kubernetes.py"
    rendering_methods = {
        fn.name
        for fn in ast.walk(ast.parse(target.read_text(encoding="utf-8")))
        if isinstance(fn, ast.FunctionDef)
        and any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "_objects" for n in ast.walk(fn))
    }
    assert rendering_methods == KUBERNETES_RENDERS_IN


# -- one quantity parser ----------------------------------------------------------------------------------------

QUANTITY_PARSER = "k3deploy/profile/names.py"


def test_kubernetes_quantities_are_parsed_in_one_module() -> None:
    """A second suffix table (`"Ki"`, `"Mi"` keys, or a `Ki|Mi` pattern) is a second parser that can disagree with
    the profile's validator: both read through profile/names.py's `quantity_value` / `quantity_bytes`."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(REPO_ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and (node.value in ("Ki", "Mi") or "Ki|Mi" in node.value)
                and where != QUANTITY_PARSER
            ):
                offenders.append(f"{where}:{node.lineno}")
            if isinstance(node, ast.FunctionDef) and node.name.endswith("quantity") and "parse" in node.name:
                offenders.append(f"{where}:{node.lineno}: def {node.name}")
    assert offenders == []


# -- one error tree ---------------------------------------------------------------------------------------------

#: Exception classes defined outside errors.py, each because it must be a library's own exception type.
FOREIGN_EXCEPTIONS = {
    # An httpx.TimeoutException, so every caller's handling of httpx timeouts takes the spent budget alike.
    "k3deploy/net/capped.py:BudgetSpent",
    # A yaml.YAMLError, raised from inside PyYAML's event loop where the loader's own errors come from.
    "k3deploy/profile/safe_yaml.py:YamlRefused",
}


def _exception_bases(tree: ast.AST) -> dict[str, list[str]]:
    return {
        node.name: [ast.unparse(base) for base in node.bases]
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(
            ast.unparse(b).split(".")[-1].endswith(("Error", "Exception", "Problem", "Failed", "Timeout"))
            for b in node.bases
        )
    }


def test_every_exception_class_is_in_errors_py() -> None:
    """errors.py holds the whole tree and each class there decides its exit code; a class of error defined
    elsewhere is a second tree (only a library's own exception type is subclassed where it is needed)."""
    found = {
        f"{path.relative_to(REPO_ROOT)}:{name}"
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "errors.py"
        for name in _exception_bases(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert found == FOREIGN_EXCEPTIONS


# -- one prompt set ---------------------------------------------------------------------------------------------

PROMPT_SET = "k3deploy/prompts/builtin.yaml"


def test_the_built_in_prompts_are_one_file_read_in_one_module() -> None:
    """smoke and bench once shipped a prompt file each: the package data beside the profiles is the one set, and only
    k3deploy/prompts/ names a YAML file of the package (a second `*.yaml` there would be a second set)."""
    data = {
        str(p.relative_to(REPO_ROOT))
        for p in PACKAGE.rglob("*.yaml")
        if p.parent != PACKAGE / "profile" / "builtin"  # the built-in profiles, read by profile/load.py
    }
    assert data == {PROMPT_SET}
    naming = {
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.endswith(("prompts.yaml", "builtin.yaml"))
    }
    assert naming == {"k3deploy/prompts/__init__.py"}


# -- one chart engine ------------------------------------------------------------------------------------------

CHART_ENGINE = "k3deploy/bench/charts.py"
SVG_MARKUP = ("<svg ", "<rect ", "<polyline ", "<circle ", "<path ", "<line ")


def test_bench_charts_are_drawn_by_one_engine() -> None:
    """bench once drew the HTML's charts as hand-written SVG beside matplotlib's PNG: matplotlib is imported by the
    chart module alone, and no module writes SVG markup itself (the HTML inlines what matplotlib draws)."""
    importers = {
        str(path.relative_to(REPO_ROOT)) for path in PACKAGE.rglob("*.py") if "matplotlib" in imported_roots(path)
    }
    assert importers == {CHART_ENGINE}
    markup = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(m in node.value for m in SVG_MARKUP)
    ]
    assert markup == []


# -- one cluster access layer -----------------------------------------------------------------------------------

#: Who may open a connection to the API server (kube/client.py `connect`): KubeApi, and the port-forward, whose
#: WebSocket stream (kubernetes.stream) needs an ApiClient of its own for the whole forward.
CONNECTORS = {"k3deploy/kube/api.py", "k3deploy/kube/portforward.py"}
#: The client's request machinery: only KubeApi builds a request by hand; kube/bounded.py is the ApiClient itself.
REQUEST_BUILDERS = {"param_serialize", "call_api", "response_deserialize"}


def test_the_cluster_is_reached_through_kube_api_only() -> None:
    """One access layer: every request goes through a `KubeApi` (kube/api.py), which holds its connection and the
    server it dialled; no second REST layer builds requests, and no module keeps cluster state in a global."""
    connects, builds, globals_ = set(), set(), set()
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(REPO_ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "connect":
                connects.add(where)
            if isinstance(node, ast.Attribute) and node.attr in REQUEST_BUILDERS and isinstance(node.ctx, ast.Load):
                builds.add(where)
            if isinstance(node, ast.Global) and path.parent.name == "kube":
                globals_.add(f"{where}:{node.lineno}")
    assert connects <= CONNECTORS, connects - CONNECTORS
    assert builds - {"k3deploy/kube/bounded.py"} == {"k3deploy/kube/api.py"}
    assert globals_ == set()


# -- one HTTP stack for the OpenAI client -----------------------------------------------------------------------

#: The OpenAI client of smoke and bench: every request (plain GETs and streams) through one aiohttp session, the
#: fast path `vllm bench serve` uses (vllm/benchmarks/lib/endpoint_request_func.py).
OPENAI_CLIENT = "k3deploy.smoke.client"


def test_the_openai_client_is_one_http_stack() -> None:
    """smoke/client.py speaks aiohttp only, with one session, one set of timeouts and one error translation: neither
    it nor any k3deploy module it reaches imports httpx (httpx once carried its plain GETs beside aiohttp's streams,
    each stack with its own timeouts and its own translation of failures)."""
    reached = _reached(OPENAI_CLIENT)
    assert "k3deploy.smoke.record" in reached  # the rule follows imports
    assert "aiohttp" in imported_roots(_module_path(OPENAI_CLIENT))
    assert sorted(name for name in reached if "httpx" in imported_roots(_module_path(name))) == []


# -- start-up ---------------------------------------------------------------------------------------------------

#: What `import k3deploy.cli` (every command's start-up, `--help` alone) must not load: each is loaded by the
#: command that uses it (tests/bench/bench_startup.py prints what start-up costs). pydantic is loaded by the first
#: command that loads a profile or parses an option (typer coerces values through pydantic), YAML by the first that
#: reads or writes it, rich by the first that prints through a console (k3deploy/console.py: a table, a live view).
STARTUP_FORBIDDEN = (
    "rich",
    "httpx",
    "aiohttp",
    "kubernetes",
    "urllib3",
    "jinja2",
    "numpy",
    "matplotlib",
    "prometheus_client",
    "grafana_foundation_sdk",
    "tenacity",
    "pynvml",
    "asyncio",
    "pydantic",
    "yaml",
)
#: k3deploy's own packages and modules `--help` must not load: each stage, the result models, the cluster access.
STARTUP_FORBIDDEN_K3DEPLOY = (
    "k3deploy.profile.model",
    "k3deploy.profile.load",
    "k3deploy.profile.names",
    "k3deploy.render",
    "k3deploy.report",
    "k3deploy.rollout",
    "k3deploy.preflight",
    "k3deploy.bench",
    "k3deploy.observe",
    "k3deploy.pin",
    "k3deploy.smoke.headline",
    "k3deploy.kube.client",
    "k3deploy.kube.api",
    "k3deploy.targets.base",
    "k3deploy.targets.kubernetes",
    "k3deploy.targets.local",
)
#: What `render` of a Kubernetes profile must not load: no HTTP client, no cluster client, no rich (its messages are
#: plain lines: console.plain), no Grafana SDK (observe/dashboard.py writes its JSON; the tests check it with it).
RENDER_FORBIDDEN = (
    "httpx",
    "aiohttp",
    "kubernetes",
    "urllib3",
    "tenacity",
    "numpy",
    "matplotlib",
    "prometheus_client",
    "rich",
    "grafana_foundation_sdk",
)
#: ...nor the Kubernetes target's class (its cluster access and rollout), preflight, or the result models: `render`
#: reaches the target's rendering alone (targets.render_for -> targets/kubernetes_render.py).
RENDER_FORBIDDEN_K3DEPLOY = (
    "k3deploy.targets.kubernetes",
    "k3deploy.targets.base",
    "k3deploy.targets.local",
    "k3deploy.kube.api",
    "k3deploy.kube.client",
    "k3deploy.rollout",
    "k3deploy.preflight",
    "k3deploy.report",
    "k3deploy.bench",
    "k3deploy.smoke.headline",
)


def _within(loaded: set[str], packages: tuple[str, ...]) -> set[str]:
    """The loaded k3deploy modules that are one of `packages` or inside one."""
    return {name for name in loaded if any(name == p or name.startswith(p + ".") for p in packages)}


_LOADED = """
import contextlib, io, json, sys
argv = json.loads(sys.argv[1])
if argv:
    sys.argv = ["k3deploy", *argv]
    from k3deploy.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with contextlib.suppress(SystemExit):
            main()
else:
    import k3deploy.cli
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_after(*argv: str) -> set[str]:
    """Modules loaded in a fresh interpreter after importing the CLI (and running `argv`, if any): each loaded module's
    top-level name, and the full name of each k3deploy module."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LOADED, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        check=True,
    )
    names = json.loads(done.stdout.splitlines()[-1])
    return {name.split(".")[0] for name in names} | {name for name in names if name.startswith("k3deploy.")}


def test_the_cli_start_up_loads_no_heavy_module() -> None:
    """`--help` pays for typer and the command modules only: no HTTP or cluster client, no pydantic and no
    profile models (built by the first command that loads a profile), no stage."""
    loaded = _loaded_after()
    assert loaded & set(STARTUP_FORBIDDEN) == set()
    assert "k3deploy.cli.render" in loaded  # the commands did register
    assert _within(loaded, STARTUP_FORBIDDEN_K3DEPLOY) == set()


def test_help_loads_no_more_than_the_start_up() -> None:
    loaded = _loaded_after("--help")
    assert "typer" in loaded  # it did print the help
    assert loaded & set(STARTUP_FORBIDDEN) == set()
    assert _within(loaded, STARTUP_FORBIDDEN_K3DEPLOY) == set()


def test_render_loads_no_http_or_cluster_client_nor_the_targets_rollout() -> None:
    loaded = _loaded_after("render", "-p", "kimi-k3-gb300-tp16")
    assert {"jinja2", "k3deploy.render.manifests", "k3deploy.targets.kubernetes_render"} <= loaded  # it did render
    assert loaded & set(RENDER_FORBIDDEN) == set()
    assert _within(loaded, RENDER_FORBIDDEN_K3DEPLOY) == set()


def test_the_module_rules_see_what_a_command_loads_when_it_runs() -> None:
    """The subprocess sees modules a command loads lazily (`plan` builds the profile models), and a forbidden
    package's prefix takes in its modules but not a sibling whose name merely starts the same."""
    loaded = _loaded_after("plan", "-p", "kimi-k3-gb300-tp16")
    assert "pydantic" in loaded
    assert {"k3deploy.profile.model", "k3deploy.profile.load"} <= _within(loaded, STARTUP_FORBIDDEN_K3DEPLOY)
    seen = _within({"k3deploy.targets.kubernetes", "k3deploy.targets.kubernetes_render"}, RENDER_FORBIDDEN_K3DEPLOY)
    assert seen == {"k3deploy.targets.kubernetes"}


# -- one style of check result ----------------------------------------------------------------------------------


def test_a_judged_check_is_built_one_way() -> None:
    """A check of a figure against its target is `report.model.judged` (PASS without a hint, else FAIL or WARN with
    one): no module keeps a `_result`/`_pass`/`_fail` builder of its own beside it."""
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.name}"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        and node.returns is not None
        and ast.unparse(node.returns) == "CheckResult"
        and node.name in ("_result", "_pass", "_fail", "_ok", "_check_result")
    ]
    assert offenders == []


# -- the rollout's seams: plan (pure), runner and targets (I/O), pipeline (every smoke) -------------------------


def _k3deploy_imports(path: Path) -> list[str]:
    """Every k3deploy module `path` imports when it runs, at any depth (not those under `if TYPE_CHECKING:`, which
    only the type checker reads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    return [
        module
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only
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
    module runs a smoke or reads a verdict itself (an in-cluster Job is run to its end there, and the pipeline reads
    its report: smoke/job_report.py `verdict`); no target or rollout module even names a smoke report."""
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: {name}"
        for package in ("targets", "rollout")
        for path in (PACKAGE / package).rglob("*.py")
        for name in ("k3deploy.smoke.runner", "k3deploy.report.smoke")
        if name in _k3deploy_imports(path)
    ]
    offenders += [
        f"{path.relative_to(REPO_ROOT)}: calls {name}"
        for package in ("targets", "rollout")
        for path in (PACKAGE / package).rglob("*.py")
        for name in ("verdict", "report_from_log")
        if _calls(path, (name,), "k3deploy.smoke.job_report")
    ]
    assert offenders == []
    assert _calls(PACKAGE / "pipeline.py", ("verdict",), "k3deploy.smoke.job_report")


def test_smoke_and_bench_measure_through_one_loop() -> None:
    """smoke and bench once each had their own measurement loop: both now open their measurement windows with
    k3deploy/smoke/window.py (scrape, dispatch, scrape) and offer requests only through k3deploy/measure/dispatch.py,
    so no other module keeps requests in flight (an asyncio Semaphore or gather) or scrapes /metrics itself."""
    for runner in ("k3deploy/smoke/runner.py", "k3deploy/bench/runner.py"):
        assert "k3deploy.smoke.window" in _k3deploy_imports(REPO_ROOT / runner), runner
    offenders = []
    for path in sorted((REPO_ROOT / "k3deploy").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel in ("k3deploy/measure/dispatch.py", "k3deploy/smoke/window.py", "k3deploy/smoke/client.py"):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [
            f"{rel}: {word}" for word in ("asyncio.Semaphore", "asyncio.gather", ".metrics()") if word in text
        ]
    assert offenders == []


def test_the_access_review_is_derived_in_one_module_from_the_set_and_the_plan() -> None:
    """Every `Access` a command asks for is made in rollout/access.py, from the rendered set and the steps its plan
    may run (`reachable`): a list kept by hand elsewhere would drift from what `up` does (tests/rollout/test_access.py
    holds that each step type has its verbs)."""
    makers = {
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if _calls(path, ("Access",), "k3deploy.preflight.access")
    }
    assert makers == {"k3deploy/rollout/access.py"}
    source = (PACKAGE / "rollout" / "access.py").read_text(encoding="utf-8")
    assert "reachable(" in source


def test_a_cluster_preflight_cannot_be_run_without_its_access_review() -> None:
    """`run_preflight` takes the review as a required argument: with a default of none, a caller that forgot it
    would pass preflight and meet its first 403 halfway through `up`."""
    from k3deploy.preflight.run import run_preflight

    needs = inspect.signature(run_preflight).parameters["needs"]
    assert needs.default is inspect.Parameter.empty
    assert needs.kind is inspect.Parameter.KEYWORD_ONLY


def _stored(path: Path) -> set[str]:
    return {
        node.attr
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
    }


def test_the_targets_keep_no_rollout_state_between_their_calls() -> None:
    """The local target's make-before-break handover is kept in the state directory from the `apply` that begins it
    to the `wait_ready` that ends it (targets/local/handover.py), and the Namespace the Kubernetes target's lock made
    is yielded by the lock and passed to each step (targets/base.py `Held`): neither is an attribute a later call
    reads. What the targets store: their options and view, and the Kubernetes target's connection (made on first
    use); its deadline is the connection options' own, which every request reads (a property, not a copy)."""
    local = _stored(PACKAGE / "targets" / "local" / "target.py")
    assert local <= {"_view", "options", "view"}, local
    kubernetes = _stored(PACKAGE / "targets" / "kubernetes.py")
    assert kubernetes <= {"options", "view", "_api"}, kubernetes


# -- one REST path builder, one look policy ---------------------------------------------------------------------

#: The module that builds Kubernetes REST paths (`rest_path`, `/version`, `/apis` discovery) and holds the look policy.
KUBE_API = "k3deploy/kube/api.py"
#: A Kubernetes REST path: the core group's `/api/...` or a named group's `/apis/...`.
KUBE_PATH_PREFIXES = ("/api/", "/apis/")
KUBE_PATHS = {"/api", "/apis"}
#: Strings of that shape that are not the Kubernetes API's, each with why.
NOT_KUBE_PATHS = {
    ("k3deploy/observe/watch_sources.py", "/api/v1/query"): "Prometheus' instant-query API",
    ("k3deploy/pin/hub.py", "/api/models/"): "the Hugging Face Hub's model API",
}


def _kube_paths(path: Path) -> set[str]:
    """String constants (f-string parts too) of `path` shaped as a Kubernetes REST path."""
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value in KUBE_PATHS or node.value.startswith(KUBE_PATH_PREFIXES))
    }


def test_only_kube_api_builds_a_kubernetes_rest_path() -> None:
    """kube/read.py once built REST paths by hand beside KubeApi, with a retry and timeout policy of its own: only
    kube/api.py spells a Kubernetes REST path, only it chooses how many attempts a call gets, and kube/read.py is
    gone (nothing imports it)."""
    builders, policies, importers = set(), set(), set()
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(REPO_ROOT))
        if where != KUBE_API:
            builders |= {(where, text) for text in _kube_paths(path)} - NOT_KUBE_PATHS.keys()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and any(k.arg == "attempts" for k in node.keywords):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("call_with_retries", "request"):
                    policies.add(f"{where}:{node.lineno}")
            if isinstance(node, (ast.Import, ast.ImportFrom)) and "k3deploy.kube.read" in _imported_modules(node):
                importers.add(where)
            if isinstance(node, ast.ImportFrom) and node.module == "k3deploy.kube":
                importers |= {where for alias in node.names if alias.name == "read"}
    assert builders == set()
    assert {p.split(":")[0] for p in policies} <= {KUBE_API}, policies
    assert not (PACKAGE / "kube" / "read.py").exists()
    assert importers == set()
    assert _kube_paths(PACKAGE / "kube" / "api.py")  # the rule sees the paths where they are built


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


# -- the rollback and `down` as plans ---------------------------------------------------------------------------

#: What changes the cluster in a rollback or `down`: a removal, a recorded revision, the foreign-change check's dry
#: runs. Each is a step's (rollout/steps.py), so only the runner calls them (and a cut-short blue-green's leftovers'
#: removal, itself a RemoveLeftovers step's, in rollout/bluegreen_repair.py).
UNDO_ACTIONS = {
    ("k3deploy.rollout.rollback", "remove"): {"k3deploy/rollout/runner.py", "k3deploy/rollout/bluegreen_repair.py"},
    ("k3deploy.rollout.rollback", "record_revision"): {"k3deploy/rollout/runner.py"},
    ("k3deploy.rollout.guard", "foreign_change"): {"k3deploy/rollout/runner.py"},
}


def test_the_rollback_and_down_are_plans_the_pipeline_runs() -> None:
    """A rollback and `down` are planned by rollout/undo.py from data alone (no module it reaches imports an I/O
    library, the cluster layer or the runner), run one step at a time by the pipeline, and the Kubernetes target
    implements neither in one go: it only plans them (`undo_plan`, `down_plan`) and runs steps."""
    reached = _reached("k3deploy.rollout.undo")
    assert "k3deploy.rollout.plan" in reached  # the rule follows imports
    assert not {n for n in reached if _module_path(n).is_file() and imported_roots(_module_path(n)) & IO_LIBRARIES}
    assert not {n for n in reached if n.startswith(("k3deploy.kube", "k3deploy.rollout.runner", "k3deploy.targets"))}
    methods = {
        node.name
        for node in ast.walk(ast.parse((PACKAGE / "targets" / "kubernetes.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
    }
    assert {"undo_plan", "down_plan", "run_step"} <= methods
    assert not methods & {"rollback", "undo", "down", "_restore"}
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: calls {module}.{name}"
        for (module, name), allowed in UNDO_ACTIONS.items()
        for path in PACKAGE.rglob("*.py")
        if str(path.relative_to(REPO_ROOT)) not in allowed and _calls(path, (name,), module)
    ]
    assert offenders == []
    assert _calls(PACKAGE / "pipeline.py", ("summary",), "k3deploy.rollout.undo")
