"""Reading k3deploy's source for the architecture rules: its modules, their imports and calls."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "k3deploy"


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


def unit_of(module: str) -> str:
    """The layer a module belongs to: its first-level package (`k3deploy.rollout.plan` -> rollout), or itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside `if TYPE_CHECKING:` blocks: imports for annotations only, never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    if node.module == "k3deploy":  # `from k3deploy import pipeline` imports the module k3deploy.pipeline
        return [f"k3deploy.{alias.name}" for alias in node.names]
    return [node.module]


def k3deploy_imports(path: Path) -> list[str]:
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
        for module in imported_modules(node)
        if module.startswith("k3deploy.")
    ]


def module_path(module: str) -> Path:
    base = REPO_ROOT / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def reached_from(module: str) -> set[str]:
    """Every k3deploy module `module` reaches by import, itself included."""
    seen, todo = {module}, [module]
    while todo:
        path = module_path(todo.pop())
        for name in k3deploy_imports(path) if path.is_file() else []:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def calls_of(path: Path, names: tuple[str, ...], module: str = "k3deploy.render.manifests") -> list[ast.Call]:
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
