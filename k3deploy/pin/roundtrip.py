"""The pinned profile as the user wrote it: comments, key order and quoting kept, only the pinned values changed.

A round-trip YAML library (ruamel.yaml) re-reads the profile's own text; PyYAML, which reads profiles everywhere
else, drops comments. The text was already read and checked by profile/load.py (no aliases, bounded depth), so
only validated text reaches it. Layered profiles (`-p a -p b`) merge into the first one's document, whose
comments stay.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from k3deploy.profile.load import ProfileRefs, apply_overrides, read_text, refs_of
from k3deploy.profile.overrides import merge

#: Lines are folded past this width, as `pin` wrote them before.
WIDTH = 120


def _yaml() -> YAML:
    rt = YAML(typ="rt")
    rt.width = WIDTH
    rt.preserve_quotes = True
    rt.indent(mapping=2, sequence=4, offset=2)
    # `null` as written, where ruamel would leave the value empty.
    rt.representer.add_representer(type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    return rt


def document(ref: ProfileRefs, sets: list[str]) -> Any:
    """The profile's documents, merged in order, with `sets` applied: a mapping that keeps the first's comments."""
    rt = _yaml()
    merged: Any = None
    for name in refs_of(ref):
        text, _ = read_text(name)
        data = rt.load(text)
        merged = data if merged is None else merge(merged, data)
    return apply_overrides(merged, sets)


def dump(data: Any, skip_first_line: str | None = None) -> str:
    """The document as YAML text; a first comment line starting with `skip_first_line` (an old header) dropped."""
    out = io.StringIO()
    _yaml().dump(data, out)
    text = out.getvalue()
    if skip_first_line and text.startswith(skip_first_line):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text
