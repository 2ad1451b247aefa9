"""Jinja2 rendering of the Kubernetes templates: StrictUndefined, values inserted as JSON scalars.

Pure apart from reading the template files (and keeping their compiled code, render/template_cache.py). Every
interpolated value goes through the `json` filter, so YAML never sees an unquoted user string (a model id, a JSON
flag, an env value) it could misread.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

import k3deploy
from k3deploy.render.template_cache import bytecode_cache


def template_dirs() -> list[Path]:
    """Where templates are looked up: inside an installed wheel first, then the source tree's templates/."""
    package = Path(k3deploy.__file__).resolve().parent
    return [path for path in (package / "_templates", package.parent / "templates") if path.is_dir()]


#: Characters YAML does not take as they are inside a quoted scalar: outside its printable set (DEL, C1 controls,
#: U+FFFE/F) or line breaks that YAML 1.1 would fold (NEL, U+2028/9). JSON leaves them raw, so they are
#: written as \uXXXX escapes, which a YAML double-quoted scalar reads back as the same character.
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")


def _json(value: Any) -> str:
    """One JSON scalar or collection: valid YAML flow syntax with every string quoted."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared Jinja2 environment (cached: template parsing is the slow part)."""
    dirs = template_dirs()
    if not dirs:
        raise FileNotFoundError("no templates directory found beside the k3deploy package")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # This module holds the environment's options and its filter: its source names the compiled code's cache.
        bytecode_cache=bytecode_cache(Path(__file__).read_bytes()),
    )
    env.filters["json"] = _json
    return env


def render_template(name: str, context: dict[str, Any]) -> str:
    """Render one template by file name with `context`; a missing variable raises jinja2.UndefinedError."""
    return environment().get_template(name).render(**context)
