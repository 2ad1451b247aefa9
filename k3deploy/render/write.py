"""`k3deploy render` output: a GitOps directory (one file per object + kustomization.yaml) or a YAML stream.

`files_of` and `stream_of` are deterministic (same set, same bytes); `render_to` is the only
function that touches the file system (through render/output_dir.py, which touches only files k3deploy
wrote) or stdout. What a target renders (these manifests, or the local target's vLLM command line) is
the target's `render`; `render_to` writes whichever it gets.
"""

from __future__ import annotations

import sys
from pathlib import Path

from k3deploy.console import plain
from k3deploy.errors import UsageError
from k3deploy.kobject import KubeObject
from k3deploy.render.manifests import Manifest, dump
from k3deploy.render.output_dir import write_set

KUSTOMIZATION = "kustomization.yaml"
_DOCUMENT_SEPARATOR = "---\n"


def kustomization(resources: list[str]) -> KubeObject:
    """The kustomization listing the files in apply order (fifo keeps that order in `kubectl kustomize`)."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "sortOptions": {"order": "fifo"},
        "resources": resources,
    }


def files_of(manifests: list[Manifest]) -> dict[str, str]:
    """File name -> content of the rendered directory, in apply order, kustomization.yaml last."""
    files = {manifest.filename: dump(manifest.obj) for manifest in manifests}
    files[KUSTOMIZATION] = dump(kustomization(list(files)))
    return files


def stream_of(manifests: list[Manifest]) -> str:
    """The multi-document YAML stream: every object file, each opened by `---`, in apply order."""
    return "".join(_DOCUMENT_SEPARATOR + dump(manifest.obj) for manifest in manifests)


def objects_summary(objects: int) -> str:
    """What a rendered set of `objects` holds, for `render`'s "wrote ... to DIR" line."""
    return f"{objects} objects + {KUSTOMIZATION}"


def render_to(files: dict[str, str], stream: str, what: str, output: str, *, force: bool = False) -> None:
    """Write the rendered `files` to the directory `output`, or `stream` to stdout when `output` is '-'.

    Everything is rendered before anything is written; `force` lets the write replace files in the
    folder that k3deploy did not write (or that changed since it did). `what` names the files' content.
    """
    if output == "-":
        sys.stdout.write(stream)
        sys.stdout.flush()
        return
    if not output.strip():
        raise UsageError("--output is empty", hint="pass a directory, or '-' for stdout")
    result = write_set(Path(output), files, force=force)
    plain(f"wrote {what} to {output}")
    if result.removed:
        plain(f"removed {len(result.removed)} file(s) of the previous render: {', '.join(result.removed)}")
    for name in result.kept:
        plain(f"warning: left {name}: k3deploy wrote it, but it changed since; it is no longer part of the set")
