"""`k3deploy render` output: a GitOps directory (one file per object + kustomization.yaml) or a YAML stream.

`rendered_files` and `rendered_stream` are deterministic (same profile, same bytes); `render_to` is the only
function that touches the file system or stdout. A `target: local` profile has no Kubernetes objects: its
rendering is the exact vLLM command line and environment the local target would launch on this host (its
interpreter, its state directory, where a rehearsal model will be generated), computed without starting
or generating anything.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build, dump

KUSTOMIZATION = "kustomization.yaml"
#: File written for a local profile rendered into a directory.
LOCAL_FILE = "vllm-server.yaml"
#: Files this module writes into a directory; older ones that the new set lacks are removed.
_OWNED_FILE = re.compile(r"^\d{2}-[a-z0-9]+-[a-z0-9.-]+\.yaml$")
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


def _write_dir(files: dict[str, str], directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--output {str(directory)!r} exists and is not a directory", hint="pass a directory, or '-' for stdout")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stale in sorted(directory.iterdir()):
            if _OWNED_FILE.match(stale.name) and stale.name not in files:
                stale.unlink()
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot write to {str(directory)!r}: {exc.strerror or exc}", hint="check the path and its permissions"
        ) from exc


def render_to(profile: Profile, output: str) -> None:
    """Render `profile` to the directory `output`, or to stdout when `output` is '-'."""
    if output == "-":
        sys.stdout.write(rendered_stream(profile))
        sys.stdout.flush()
        return
    files = rendered_files(profile)
    _write_dir(files, Path(output))
    from k3deploy.console import err

    objects = len(files) - (1 if KUSTOMIZATION in files else 0)
    what = f"{objects} objects + {KUSTOMIZATION}" if KUSTOMIZATION in files else "the vLLM command and environment"
    err.print(f"wrote {what} to {output}")
