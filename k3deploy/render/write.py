"""`k3deploy render` output: a GitOps directory (one file per object + kustomization.yaml) or a YAML stream.

`rendered_files` and `rendered_stream` are deterministic (same profile, same bytes); `render_to` is the only
function that touches the file system (through render/output_dir.py, which touches only files k3deploy
wrote) or stdout. A `target: local` profile has no Kubernetes objects: its
rendering is the exact vLLM command line and environment the local target would launch on this host (its
interpreter, its state directory, where a rehearsal model will be generated), computed without starting
or generating anything.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from k3deploy.errors import UsageError
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build, dump
from k3deploy.render.output_dir import RECORD, write_set

KUSTOMIZATION = "kustomization.yaml"
#: File written for a local profile rendered into a directory.
LOCAL_FILE = "vllm-server.yaml"
#: The record of the files k3deploy wrote into an output folder (name -> sha256); see render/output_dir.py.
RENDER_RECORD = RECORD
_DOCUMENT_SEPARATOR = "---\n"


def local_view(profile: Profile) -> dict[str, Any]:
    """What a local profile runs on this host: the local target's own launch (argv, added environment, files)."""
    from k3deploy.targets.local import LocalTarget

    launch = LocalTarget().launch(profile)
    return {
        "profile": profile.name,
        "target": profile.target,
        "command": launch.argv,
        "env": launch.env,
        "model": launch.model_path,
        "rehearsal": profile.model.rehearsal,
        "log": str(launch.log_path),
    }


def kustomization(resources: list[str]) -> dict[str, Any]:
    """The kustomization listing the files in apply order (fifo keeps that order in `kubectl kustomize`)."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "sortOptions": {"order": "fifo"},
        "resources": resources,
    }


def rendered_files(profile: Profile) -> dict[str, str]:
    """File name -> content of the rendered directory, in apply order, kustomization.yaml last."""
    if profile.target == "local":
        return {LOCAL_FILE: dump(local_view(profile))}
    files = {manifest.filename: dump(manifest.obj) for manifest in build(profile)}
    files[KUSTOMIZATION] = dump(kustomization(list(files)))
    return files


def rendered_stream(profile: Profile) -> str:
    """The multi-document YAML stream: every object file, each opened by `---`, in apply order."""
    if profile.target == "local":
        return dump(local_view(profile))
    return "".join(_DOCUMENT_SEPARATOR + dump(manifest.obj) for manifest in build(profile))


def render_to(profile: Profile, output: str, *, force: bool = False) -> None:
    """Render `profile` to the directory `output`, or to stdout when `output` is '-'.

    Everything is rendered before anything is written; `force` lets the write replace files in the
    folder that k3deploy did not write (or that changed since it did).
    """
    if output == "-":
        sys.stdout.write(rendered_stream(profile))
        sys.stdout.flush()
        return
    if not output.strip():
        raise UsageError("--output is empty", hint="pass a directory, or '-' for stdout")
    files = rendered_files(profile)
    result = write_set(Path(output), files, force=force)
    from k3deploy.console import err

    objects = len(files) - (1 if KUSTOMIZATION in files else 0)
    what = f"{objects} objects + {KUSTOMIZATION}" if KUSTOMIZATION in files else "the vLLM command and environment"
    err.print(f"wrote {what} to {output}", markup=False, highlight=False)
    if result.removed:
        err.print(f"removed {len(result.removed)} file(s) of the previous render: {', '.join(result.removed)}", markup=False, highlight=False)
    for name in result.kept:
        err.print(f"warning: left {name}: k3deploy wrote it, but it changed since; it is no longer part of the set",
                  markup=False, highlight=False)
