"""One way to each thing: which target a profile names, rendering the set, quantities, exceptions, the built-in
prompts, bench charts, reaching the cluster, the OpenAI client's HTTP stack, judged checks, the measurement loop and
Kubernetes REST paths each live in one place."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.architecture.code import (
    PACKAGE,
    calls_of,
    imported_modules,
    imported_roots,
    k3deploy_imports,
    module_path,
    reached_from,
)
from tests.conftest import REPO_ROOT


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
#: caller passed no set (`preflight --node/--cluster`), and the Kubernetes target (targets/kubernetes/target.py `_objects`)
#: for what no command's set covers (below).
RENDERERS = {
    "k3deploy/render/manifests.py",
    "k3deploy/render/write.py",
    "k3deploy/targets/kubernetes/render.py",
    "k3deploy/preflight/run.py",
    "k3deploy/targets/kubernetes/target.py",
}


#: The Kubernetes target's only method that renders afresh: `status`. Every other method, the plan (which pins the
#: node-preflight Job of the set to the nodes found: render/node_preflight.py), the rollback's and `down`'s plans
#: among them, takes the set the command rendered (targets/base.py).
KUBERNETES_RENDERS_IN = {"status"}


def test_the_set_is_rendered_only_where_a_command_renders_it_once() -> None:
    """Everything else takes the rendered objects as an argument (preflight's checks and its access review, which is
    derived from them; the rollout's questions, lock, plan, smokes, rollback and removal): a new call of `build` or
    `rendered_objects` elsewhere is a second render of the same set (tests/realk8s/rollout/test_render_once.py counts
    them per command)."""
    callers = {
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if calls_of(path, ("build", "rendered_objects"))
    }
    assert callers <= RENDERERS, callers - RENDERERS
    assert "k3deploy/preflight/checks_cluster.py" not in callers
    target = PACKAGE / "targets" / "kubernetes" / "target.py"
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
    # The gpu-check script runs alone in the vLLM image (the standard library only): it cannot import errors.py, so it
    # keeps its one error of its own and maps it to errors.py's exit code 3 itself.
    "k3deploy/pod_scripts/gpu_check.py:NvmlError",
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
OPENAI_CLIENT = "k3deploy.measure.client"


def test_the_openai_client_is_one_http_stack() -> None:
    """measure/client.py speaks aiohttp only, with one session, one set of timeouts and one error translation: neither
    it nor any k3deploy module it reaches imports httpx (httpx once carried its plain GETs beside aiohttp's streams,
    each stack with its own timeouts and its own translation of failures)."""
    reached = reached_from(OPENAI_CLIENT)
    assert "k3deploy.measure.record" in reached  # the rule follows imports
    assert "aiohttp" in imported_roots(module_path(OPENAI_CLIENT))
    assert sorted(name for name in reached if "httpx" in imported_roots(module_path(name))) == []


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


def test_smoke_and_bench_measure_through_one_loop() -> None:
    """smoke and bench once each had their own measurement loop: both now open their measurement windows with
    k3deploy/measure/window.py (scrape, dispatch, scrape) and offer requests only through k3deploy/measure/dispatch.py,
    so no other module keeps requests in flight (an asyncio Semaphore or gather) or scrapes /metrics itself."""
    for runner in ("k3deploy/smoke/runner.py", "k3deploy/bench/runner.py"):
        assert "k3deploy.measure.window" in k3deploy_imports(REPO_ROOT / runner), runner
    offenders = []
    for path in sorted((REPO_ROOT / "k3deploy").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel in ("k3deploy/measure/dispatch.py", "k3deploy/measure/window.py", "k3deploy/measure/client.py"):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [
            f"{rel}: {word}" for word in ("asyncio.Semaphore", "asyncio.gather", ".metrics()") if word in text
        ]
    assert offenders == []


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
            if isinstance(node, (ast.Import, ast.ImportFrom)) and "k3deploy.kube.read" in imported_modules(node):
                importers.add(where)
            if isinstance(node, ast.ImportFrom) and node.module == "k3deploy.kube":
                importers |= {where for alias in node.names if alias.name == "read"}
    assert builders == set()
    assert {p.split(":")[0] for p in policies} <= {KUBE_API}, policies
    assert not (PACKAGE / "kube" / "read.py").exists()
    assert importers == set()
    assert _kube_paths(PACKAGE / "kube" / "api.py")  # the rule sees the paths where they are built


# -- one measuring kit ------------------------------------------------------------------------------------------


def test_smoke_bench_and_observe_measure_with_one_kit_none_imports_another() -> None:
    """The client, the SSE scan, the per-request records, the window and the /metrics rules are measure/'s, which
    smoke, bench and observe use: bench and observe import nothing from smoke (bench once borrowed smoke's client and
    observe its counter rules), and measure/ imports none of the three."""
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: imports {name}"
        for package, forbidden in (
            ("bench", ("k3deploy.smoke",)),
            ("observe", ("k3deploy.smoke",)),
            ("measure", ("k3deploy.smoke", "k3deploy.bench", "k3deploy.observe")),
        )
        for path in (PACKAGE / package).rglob("*.py")
        for name in k3deploy_imports(path)
        if name == "k3deploy.smoke" or name.startswith(tuple(f"{f}." for f in forbidden))
    ]
    assert offenders == []
    assert "k3deploy.measure.client" in k3deploy_imports(PACKAGE / "bench" / "runner.py")  # the rule reads imports
