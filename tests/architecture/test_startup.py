"""Start-up: what the CLI, `--help` and `render` load, checked in a fresh interpreter that runs them."""

from __future__ import annotations

from tests.conftest import EXAMPLE_SETS, REPO_ROOT

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
    "k3deploy.targets.kubernetes.target",
    "k3deploy.targets.local",
    "k3deploy.stage",
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
#: reaches the target's rendering alone (targets.render_for -> targets/kubernetes/render.py).
RENDER_FORBIDDEN_K3DEPLOY = (
    "k3deploy.targets.kubernetes.target",
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
    loaded = _loaded_after("render", "-p", "kimi-k3-gb300-tp16", *EXAMPLE_SETS)
    assert {"jinja2", "k3deploy.render.manifests", "k3deploy.targets.kubernetes.render"} <= loaded  # it did render
    assert loaded & set(RENDER_FORBIDDEN) == set()
    assert _within(loaded, RENDER_FORBIDDEN_K3DEPLOY) == set()


def test_the_module_rules_see_what_a_command_loads_when_it_runs() -> None:
    """The subprocess sees modules a command loads lazily (`plan` builds the profile models), and a forbidden
    package's prefix takes in its modules but not a sibling whose name merely starts the same."""
    loaded = _loaded_after("plan", "-p", "kimi-k3-gb300-tp16")
    assert "pydantic" in loaded
    assert {"k3deploy.profile.model", "k3deploy.profile.load"} <= _within(loaded, STARTUP_FORBIDDEN_K3DEPLOY)
    # k3deploy.reports: a sibling of the forbidden k3deploy.report whose name merely starts the same.
    modules = {"k3deploy.targets.kubernetes.target", "k3deploy.targets.kubernetes.render", "k3deploy.reports"}
    assert _within(modules, RENDER_FORBIDDEN_K3DEPLOY) == {"k3deploy.targets.kubernetes.target"}
