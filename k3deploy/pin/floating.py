"""Which versions in a profile float: Hub revisions that are not commits, images without a digest.

Pure: no I/O. `pin` resolves exactly these fields; in a production profile `render` refuses them (exit 2) and
preflight FAILs on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from k3deploy.errors import ProfileError
from k3deploy.profile.load import builtin_names
from k3deploy.profile.model import Profile

COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
_DIGEST_SUFFIX = re.compile(r"@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Pinnable:
    """One version field of a profile: its dotted path, the repo or image it names, and its value now.

    `subject_field` is where the subject is written: the repo id of a revision (rewritten when the repo was renamed).
    """

    field: str
    kind: Literal["revision", "image"]
    subject: str
    value: str | None
    subject_field: str = ""

    @property
    def pinned(self) -> bool:
        """True for a 40-hex commit (a short sha is not: it can become ambiguous) or an image with a sha256 digest."""
        if self.kind == "revision":
            return self.value is not None and COMMIT_SHA.match(self.value) is not None
        return self.value is not None and _DIGEST_SUFFIX.search(self.value) is not None


def is_hub_id(model_id: str) -> bool:
    """True for an `org/name` Hub repo id; False for a local path."""
    return not model_id.startswith(("/", ".", "~")) and model_id.count("/") == 1


def pinnable_fields(profile: Profile) -> list[Pinnable]:
    """Every version field of `profile` that can float, pinned or not, in profile order.

    On Kubernetes, every image the rendered set runs: vLLM, the smoke and node-preflight Jobs' k3deploy image,
    the weight prefetch Job's when it names its own (else it runs vLLM's), and the endpoint picker's when routing is
    `inference-pool`.
    """
    fields: list[Pinnable] = []
    if not profile.model.rehearsal and is_hub_id(profile.model.id):
        fields.append(Pinnable("model.revision", "revision", profile.model.id, profile.model.revision, "model.id"))
    spec = profile.speculative
    if spec is not None and spec.model is not None and is_hub_id(spec.model):
        fields.append(Pinnable("speculative.revision", "revision", spec.model, spec.revision, "speculative.model"))
    if profile.on_kubernetes:
        kube = profile.kubernetes
        images = [("vllm.image", profile.vllm.image), ("kubernetes.smoke_image", kube.smoke_image)]
        if kube.prefetch_image is not None:  # else the prefetch runs vllm.image
            images.append(("kubernetes.prefetch_image", kube.prefetch_image))
        if kube.routing == "inference-pool":
            images.append(("kubernetes.epp_image", kube.epp_image))
        fields.extend(Pinnable(name, "image", value, value, name) for name, value in images)
    return fields


def node_arch(profile: Profile) -> str:
    """The CPU architecture the images must run on: the nodes' (`hardware.arch`), else the declared image arch."""
    return profile.hardware.arch if profile.hardware is not None else profile.vllm.image_arch


def pin_command(profile: Profile) -> str:
    """The exact `k3deploy pin` command for this profile (a file path stands in for a profile not built in)."""
    name = profile.name if profile.name in builtin_names() else "PROFILE.yaml"
    return f"k3deploy pin -p {name} -o pinned.yaml"


def _why(item: Pinnable) -> str:
    if item.kind == "revision":
        return f"{item.field}={item.value or 'main'} (a Hub revision that is not a 40-hex commit)"
    return f"{item.field}={item.value} (a tag without a digest)"


def refuse_floating(profile: Profile) -> None:
    """Raise a ProfileError (exit 2) naming every floating version field of a production profile, on one line.

    A production set must run the weights and images that were validated: a branch or a bare tag can change under
    it between two renders."""
    if not profile.production:
        return
    floating = [item for item in pinnable_fields(profile) if not item.pinned]
    if floating:
        raise ProfileError(
            f"production profile {profile.name!r} names floating versions: {'; '.join(_why(f) for f in floating)}",
            hint=f"{pin_command(profile)}, then render pinned.yaml (or set production: false for an example set)",
        )
