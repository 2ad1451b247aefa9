"""Which versions in a profile float: Hub revisions that are not commits, images without a digest.

Pure: no I/O. `pin` resolves exactly these fields; preflight FAILs on them in a production profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from k3deploy.profile.model import Profile

COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
_DIGEST_SUFFIX = re.compile(r"@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Pinnable:
    """One version field of a profile: its dotted path, the repo or image it names, and its value now."""

    field: str
    kind: Literal["revision", "image"]
    subject: str
    value: str | None

    @property
    def pinned(self) -> bool:
        """True for a 40-hex commit or an image with a sha256 digest."""
        if self.kind == "revision":
            return self.value is not None and COMMIT_SHA.match(self.value) is not None
        return self.value is not None and _DIGEST_SUFFIX.search(self.value) is not None


def is_hub_id(model_id: str) -> bool:
    """True for an `org/name` Hub repo id; False for a local path."""
    return not model_id.startswith(("/", ".", "~")) and model_id.count("/") == 1


def pinnable_fields(profile: Profile) -> list[Pinnable]:
    """Every version field of `profile` that can float, pinned or not, in profile order."""
    fields: list[Pinnable] = []
    if not profile.model.rehearsal and is_hub_id(profile.model.id):
        fields.append(Pinnable("model.revision", "revision", profile.model.id, profile.model.revision))
    spec = profile.speculative
    if spec is not None and spec.model is not None and is_hub_id(spec.model):
        fields.append(Pinnable("speculative.revision", "revision", spec.model, spec.revision))
    if profile.on_kubernetes:
        kube = profile.kubernetes
        # Every image the rendered set runs: the server, the smoke and node-preflight Jobs' k3deploy image, the
        # prefetch Job's, and the endpoint picker's when routing goes through an InferencePool.
        images = [("vllm.image", profile.vllm.image), ("kubernetes.smoke_image", kube.smoke_image)]
        images.append(("kubernetes.prefetch_image", kube.prefetch_image))
        if kube.routing == "inference-pool":
            images.append(("kubernetes.epp_image", kube.epp_image))
        fields += [Pinnable(field, "image", image, image) for field, image in images]
    return fields


def node_arch(profile: Profile) -> str:
    """The CPU architecture the images must run on: the nodes' (`hardware.arch`), else the declared image arch."""
    return profile.hardware.arch if profile.hardware is not None else profile.vllm.image_arch
