"""The rollout as a plan: the plan reaches no I/O, the pipeline runs every smoke and every undo step, the targets
keep no state between calls and expose no private attributes, and the access review is derived from the set and
the plan."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from tests.architecture.code import (
    IO_LIBRARIES,
    PACKAGE,
    calls_of,
    imported_modules,
    imported_roots,
    k3deploy_imports,
    module_name,
    module_path,
    reached_from,
)
from tests.conftest import REPO_ROOT


def test_the_rollout_plan_reaches_no_io_through_what_it_imports() -> None:
    """rollout/plan.py decides the steps from data alone: no module it reaches, however deep, imports an I/O
    library, the cluster layer (kube/) or the runner."""
    reached = reached_from("k3deploy.rollout.plan")
    assert "k3deploy.render.manifests" in reached  # the rule follows imports
    offenders = {
        name: sorted(imported_roots(module_path(name)) & IO_LIBRARIES)
        for name in sorted(reached)
        if module_path(name).is_file() and imported_roots(module_path(name)) & IO_LIBRARIES
    }
    assert offenders == {}
    assert not {n for n in reached if n.startswith(("k3deploy.kube", "k3deploy.targets"))}


def _every_import(path: Path) -> set[str]:
    """Every module `path` imports, at any depth, `if TYPE_CHECKING:` imports included."""
    return {
        module
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for module in imported_modules(node)
    }


def test_rollout_is_the_pure_planner() -> None:
    """rollout/ is the planner, a folder rule in place of a list of its pure modules: no module of it imports an I/O
    library or anything under kube/ or targets/ (even for annotations only), and none it reaches when it runs does
    either; the I/O that carries a plan out is the Kubernetes target's (targets/kubernetes/)."""
    modules = sorted((PACKAGE / "rollout").rglob("*.py"))
    assert PACKAGE / "rollout" / "plan.py" in modules  # the rule sees the folder
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: imports {name}"
        for path in modules
        for name in sorted(_every_import(path))
        if name.split(".")[0] in IO_LIBRARIES or name.startswith(("k3deploy.kube", "k3deploy.targets"))
    ]
    for path in modules:
        reached = reached_from(module_name(path))
        offenders += [
            f"{path.relative_to(REPO_ROOT)}: reaches {name}"
            for name in sorted(reached)
            if name.startswith(("k3deploy.kube", "k3deploy.targets"))
            or (module_path(name).is_file() and imported_roots(module_path(name)) & IO_LIBRARIES)
        ]
    assert offenders == []


#: Modules under targets/ that are a target's tools, not its classes (the rollout I/O the Kubernetes target holds,
#: and the progress view): their classes' privates (the Lease's `_body`) are theirs, not a Target's.
TARGETS_TOOLS = {
    *(
        f"kubernetes/{name}"
        for name in (
            "apply",
            "bluegreen",
            "bluegreen_repair",
            "diagnosis",
            "forward",
            "gates",
            "guard",
            "history",
            "in_cluster",
            "lease",
            "runner",
            "streams",
            "upgrade",
            "wait",
        )
    ),
    "progress",
}


def _target_privates() -> set[str]:
    """The private attributes and methods of the Target classes (`self._x` assigned or `def _x` in targets/)."""
    names: set[str] = set()
    for path in (PACKAGE / "targets").rglob("*.py"):
        if path.relative_to(PACKAGE / "targets").with_suffix("").as_posix() in TARGETS_TOOLS:
            continue
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


#: How a Kubernetes object is annotated (kobject.py), which a parameter named `target` may be.
OBJECT_TYPES = {"KubeObject", "dict"}


def test_rollout_modules_take_no_target() -> None:
    """rollout/ is what the targets use, never the other way round: no rollout module imports k3deploy.targets or
    takes a target as a parameter (upgrade.py and bluegreen.py once took it as Any); each gets the API, the
    namespace, the options it needs."""
    offenders = []
    for path in (PACKAGE / "rollout").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [
            f"{path.relative_to(REPO_ROOT)}: imports {module}"
            for module in k3deploy_imports(path)
            if module.startswith("k3deploy.targets")
        ]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                # A waited object is a "target" too (rollout/judge.py, a KubeObject): only a Target, or an untyped
                # Any, counts.
                offenders += [
                    f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.name}({a.arg})"
                    for a in arguments
                    if a.arg == "target"
                    and (a.annotation is None or not OBJECT_TYPES & set(re.findall(r"\w+", ast.unparse(a.annotation))))
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
        if name in k3deploy_imports(path)
    ]
    offenders += [
        f"{path.relative_to(REPO_ROOT)}: calls {name}"
        for package in ("targets", "rollout")
        for path in (PACKAGE / package).rglob("*.py")
        for name in ("verdict", "report_from_log")
        if calls_of(path, (name,), "k3deploy.smoke.job_report")
    ]
    assert offenders == []
    assert calls_of(PACKAGE / "pipeline.py", ("verdict",), "k3deploy.smoke.job_report")


def test_the_access_review_is_derived_in_one_module_from_the_set_and_the_plan() -> None:
    """Every `Access` a command asks for is made in rollout/access.py, from the rendered set and the steps its plan
    may run (`reachable`): a list kept by hand elsewhere would drift from what `up` does (tests/rollout/test_access.py
    holds that each step type has its verbs)."""
    makers = {
        str(path.relative_to(REPO_ROOT))
        for path in PACKAGE.rglob("*.py")
        if calls_of(path, ("Access",), "k3deploy.preflight.access")
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
    """The local target's running server is the record in its state directory, and the Namespace the Kubernetes
    target's lock made is yielded by the lock and passed to each step (targets/base.py `Held`): neither is an
    attribute a later call reads. What the targets store: their options and Reporter, and the Kubernetes target's connection (made on first
    use); its deadline is the connection options' own, which every request reads (a property, not a copy)."""
    local = _stored(PACKAGE / "targets" / "local" / "target.py")
    assert local <= {"options", "reporter"}, local
    kubernetes = _stored(PACKAGE / "targets" / "kubernetes" / "target.py")
    assert kubernetes <= {"options", "reporter", "_api"}, kubernetes


# -- the rollback and `down` as plans ---------------------------------------------------------------------------

#: What changes the cluster in a rollback or `down`: a removal, a recorded revision, the foreign-change check's dry
#: runs. Each is a step's (rollout/steps.py), so only the runner calls them (and a cut-short blue-green's leftovers'
#: removal, itself a RemoveLeftovers step's, in targets/kubernetes/bluegreen_repair.py).
UNDO_ACTIONS = {
    ("k3deploy.targets.kubernetes.history", "remove"): {
        "k3deploy/targets/kubernetes/runner.py",
        "k3deploy/targets/kubernetes/bluegreen_repair.py",
    },
    ("k3deploy.targets.kubernetes.history", "record_revision"): {"k3deploy/targets/kubernetes/runner.py"},
    ("k3deploy.targets.kubernetes.guard", "foreign_change"): {"k3deploy/targets/kubernetes/runner.py"},
}


def test_the_rollback_and_down_are_plans_the_pipeline_runs() -> None:
    """A rollback and `down` are planned by rollout/undo.py from data alone (no module it reaches imports an I/O
    library, the cluster layer or the runner), run one step at a time by the pipeline, and the Kubernetes target
    implements neither in one go: it only plans them (`undo_plan`, `down_plan`) and runs steps."""
    reached = reached_from("k3deploy.rollout.undo")
    assert "k3deploy.rollout.plan" in reached  # the rule follows imports
    assert not {n for n in reached if module_path(n).is_file() and imported_roots(module_path(n)) & IO_LIBRARIES}
    assert not {n for n in reached if n.startswith(("k3deploy.kube", "k3deploy.targets"))}
    methods = {
        node.name
        for node in ast.walk(ast.parse((PACKAGE / "targets" / "kubernetes" / "target.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
    }
    assert {"undo_plan", "down_plan", "run_step"} <= methods
    assert not methods & {"rollback", "undo", "down", "_restore"}
    offenders = [
        f"{path.relative_to(REPO_ROOT)}: calls {module}.{name}"
        for (module, name), allowed in UNDO_ACTIONS.items()
        for path in PACKAGE.rglob("*.py")
        if str(path.relative_to(REPO_ROOT)) not in allowed and calls_of(path, (name,), module)
    ]
    assert offenders == []
    assert calls_of(PACKAGE / "pipeline.py", ("summary",), "k3deploy.rollout.undo")


ONE_GO_METHODS = {"apply", "wait_ready", "rollback", "down"}


def test_the_target_contract_has_no_stub_and_only_one_go_targets_work_in_one_go() -> None:
    """`Target` declares every plan and the running of a step with no default (a target that plans its own steps
    inherits no method that only raises); the one-go methods are `OneGoTarget`'s alone, and the Kubernetes target is
    not one."""
    from k3deploy.targets.base import Target
    from k3deploy.targets.local.target import LocalTarget
    from k3deploy.targets.one_go import OneGoTarget

    assert {"plan", "run_step", "undo_plan", "down_plan"} <= Target.__abstractmethods__
    assert not ONE_GO_METHODS & set(dir(Target))
    assert OneGoTarget.__abstractmethods__ >= ONE_GO_METHODS
    assert issubclass(LocalTarget, OneGoTarget) and not LocalTarget.__abstractmethods__
    stubs = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}"
        for path in (PACKAGE / "targets").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node.exc or node)
    ]
    assert stubs == []
    kubernetes = ast.parse((PACKAGE / "targets" / "kubernetes" / "target.py").read_text(encoding="utf-8"))
    (cls,) = [n for n in kubernetes.body if isinstance(n, ast.ClassDef) and n.name == "KubernetesTarget"]
    assert [ast.unparse(b) for b in cls.bases] == ["Target"]
