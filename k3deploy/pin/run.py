"""`k3deploy pin`: resolve every floating version of a profile and write the pinned profile.

Images become `name:tag@sha256:...` after the registry shows their index lists the nodes' platform;
Hub revisions become the commit they point at. Everything else in the profile is kept as written, comments and
key order included (pin/roundtrip.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pydantic import ValidationError

from k3deploy.errors import CheckFailed, ProfileError
from k3deploy.fileio.write import OutputFile, check_output, write_output
from k3deploy.kobject import JsonObject
from k3deploy.kube.deadline import Deadline
from k3deploy.pin import roundtrip
from k3deploy.pin.floating import Pinnable, node_arch, pinnable_fields
from k3deploy.pin.hub import HubClient
from k3deploy.pin.image_vllm import ImageVllm, find_vllm, scan_deadline
from k3deploy.pin.oci import ImageResolution, runs_on
from k3deploy.pin.registry import RegistryClient
from k3deploy.profile.load import ProfileRefs, load_profile, load_raw
from k3deploy.profile.model import Profile

#: First line of every file `pin` writes: how it recognises a file it may overwrite.
HEADER = "# Pinned profile written by `k3deploy pin`"


@dataclass(frozen=True)
class PinRow:
    """One field: its value before and after, and what the source said about it."""

    field: str
    before: str | None
    after: str
    note: str


@dataclass(frozen=True)
class PinOutcome:
    """The pinned profile as a mapping, its YAML text, and one row per version field."""

    data: JsonObject
    text: str
    rows: list[PinRow]
    #: The vLLM inside the resolved vllm.image (None when the profile names no image to pin).
    vllm: ImageVllm | None = None


def _set(data: JsonObject, dotted: str, value: str) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def _pin_image(item: Pinnable, arch: str, registry: RegistryClient) -> tuple[PinRow, ImageResolution]:
    resolved = registry.resolve(item.value or "", arch=arch)
    listed = ", ".join(str(p) for p in resolved.platforms) or "no platform"
    if not runs_on(resolved.platforms, arch):
        what = "an index without" if resolved.is_index else "a single-platform image, not"
        raise CheckFailed(
            f"{item.field} {item.value} is built for {listed}, not linux/{arch} (the nodes' platform): {what} linux/{arch}",
            hint=f"choose a tag built for linux/{arch} (check with `k3deploy pin`), or correct hardware.arch",
        )
    if resolved.is_index:
        note = f"index: {listed}; linux/{arch} image {resolved.platform_digest} verified"
    else:
        note = f"single-platform image: {listed}"
    return PinRow(item.field, item.value, resolved.pinned, note), resolved


def _pin_revision(item: Pinnable, data: JsonObject, hub: HubClient) -> PinRow:
    resolved = hub.resolve(item.subject, item.value)
    note = f"{item.subject}@{item.value or 'main'}"
    if resolved.repo_id != item.subject:
        _set(data, item.subject_field, resolved.repo_id)
        note += f"; the repo was renamed: {item.subject_field} is now {resolved.repo_id}"
    return PinRow(item.field, item.value, resolved.sha, note)


def pin_profile(
    ref: ProfileRefs, sets: list[str], registry: RegistryClient, hub: HubClient, deadline: Deadline | None = None
) -> PinOutcome:
    """Resolve the floating versions of profile `ref` (with `sets` applied); exit 1 when an image cannot run on the
    nodes. Then read which vLLM the resolved vllm.image carries (within what is left of `deadline`)."""
    profile = load_profile(ref, sets)
    _, origin = load_raw(ref, sets)
    data = roundtrip.document(ref, sets)
    arch = node_arch(profile)
    rows = []
    vllm: ImageVllm | None = None
    vllm_image: tuple[str, ImageResolution] | None = None
    for item in pinnable_fields(profile):
        if item.kind == "image":
            row, resolved = _pin_image(item, arch, registry)
            if item.field == "vllm.image":
                vllm_image = (row.after, resolved)
        elif item.pinned:
            row = PinRow(item.field, item.value, item.value or "", "already a commit")
        else:
            row = _pin_revision(item, data, hub)
        _set(data, item.field, row.after)
        rows.append(row)
    if vllm_image is not None:  # after every field is pinned: the scan never takes their time
        vllm = find_vllm(registry, vllm_image[0], vllm_image[1], scan_deadline(deadline))
    try:
        Profile.model_validate(data)
    except ValidationError as exc:  # a resolved value the model refuses is a bug here, not the user's
        raise ProfileError(
            f"the pinned profile does not validate: {exc.errors()[0]['msg']}",
            hint="report it; pin each field by hand with --set meanwhile",
        ) from None
    # The profile as written: its comments and key order kept, only the pinned values (and --sets) changed.
    body = roundtrip.dump(data, skip_first_line=HEADER)
    text = f"{HEADER} from {origin}.\n{body}"
    return PinOutcome(data=data, text=text, rows=rows, vllm=vllm)


def check_pinned_output(output: str | None, *, force: bool = False) -> OutputFile | None:
    """The checked `-o` file (None for stdout), before any registry or Hub request: fileio/write.py's rules."""
    if output in (None, "-"):
        return None
    return check_output(output, "--output", force=force)


def write_pinned(text: str, out: OutputFile | None) -> None:
    """Write to stdout (None) or the checked file: never through a symlink, never over a file k3deploy did not write."""
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_output(out, text)
