"""Image references, registry auth challenges and manifest platforms: the pure half of `k3deploy pin`.

Pure: no I/O. The reference grammar follows distribution/reference (`reference.go`, `normalize.go`): the
first path component is a registry host when it holds a '.' or ':' or is `localhost`; otherwise the image
is on Docker Hub, whose API host is `registry-1.docker.io` and whose one-component names live under
`library/`. Media types and the index/manifest shapes are the OCI image-spec's and Docker's
(distribution `manifest/ocischema`, `manifest/manifestlist`, `manifest/schema2`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from k3deploy.errors import ImageReferenceError
from k3deploy.pin.answers import DIGEST, Descriptor, ErrorBody, ImageConfig, Manifest

#: Media types a registry may answer a manifest GET with, in the Accept order a client sends them.
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_ACCEPT = (OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST)
INDEX_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST)
IMAGE_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)

DOCKER_HUB = "docker.io"
DOCKER_HUB_API_HOST = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = {"docker.io", "index.docker.io", "registry-1.docker.io"}
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_REPOSITORY = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_CHALLENGE_PARAM = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference: where the registry is, which repository, which tag and/or digest."""

    original: str
    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def api_host(self) -> str:
        """The host that serves the registry API for this reference."""
        return DOCKER_HUB_API_HOST if self.registry == DOCKER_HUB else self.registry

    @property
    def reference(self) -> str:
        """What to put after `/manifests/`: the digest when pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def pinned(self, digest: str) -> str:
        """The original reference with `digest` attached (the tag kept, for people reading it)."""
        return f"{self.original.split('@', 1)[0]}@{digest}"


def parse_image(text: str) -> ImageRef:
    """Parse `[host[:port]/]path[:tag][@sha256:...]`; raise ImageReferenceError on anything else."""
    name, _, digest = text.partition("@")
    if digest and not DIGEST.match(digest):
        raise ImageReferenceError(f"{text!r}: digest {digest!r} is not sha256:<64 hex>")
    tag = None
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG.match(tag):
            raise ImageReferenceError(f"{text!r}: tag {tag!r} is not a valid tag")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, rest
    else:
        registry, repository = DOCKER_HUB, name
    if registry in _DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
        if "/" not in repository:
            repository = f"library/{repository}"
    if not _REPOSITORY.match(repository):
        raise ImageReferenceError(f"{text!r}: repository {repository!r} is not lower-case path components")
    return ImageRef(original=text, registry=registry, repository=repository, tag=tag, digest=digest or None)


@dataclass(frozen=True)
class BearerChallenge:
    """A `WWW-Authenticate: Bearer realm=...,service=...,scope=...` challenge (RFC 6750 section 3)."""

    realm: str
    service: str | None
    scope: str | None


def parse_bearer_challenge(header: str) -> BearerChallenge | None:
    """The Bearer challenge in a WWW-Authenticate value; None when the registry asks for another scheme.

    distribution writes it as `Bearer realm="...",service="...",scope="..."`
    (registry/auth/token/accesscontroller.go, challengeParams).
    """
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    values = {
        m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3))
        for m in _CHALLENGE_PARAM.finditer(params)
    }
    if not values.get("realm"):
        return None
    return BearerChallenge(realm=values["realm"], service=values.get("service"), scope=values.get("scope"))


@dataclass(frozen=True)
class Platform:
    """An image platform as an index lists it (`os/architecture[/variant]`)."""

    os: str
    architecture: str
    variant: str | None = None

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.architecture, self.variant) if p)


@dataclass(frozen=True)
class ImageResolution:
    """What the registry says an image reference is: its digest, manifest type and the platforms it runs on."""

    ref: ImageRef
    digest: str
    media_type: str
    platforms: list[Platform] = field(default_factory=list)
    #: For an index: the digest of the nodes' platform image, fetched and verified; None when not asked or absent.
    platform_digest: str | None = None
    #: Layer blobs (digest, media type) of the nodes' image, bottom first; empty when it was not fetched.
    layers: tuple[tuple[str, str], ...] = ()

    @property
    def pinned(self) -> str:
        """The reference with its digest attached."""
        return self.ref.pinned(self.digest)

    @property
    def is_index(self) -> bool:
        """True for a multi-platform index or manifest list."""
        return self.media_type in INDEX_TYPES


def index_platforms(index: Manifest) -> list[Platform]:
    """The runnable platforms an OCI index or Docker manifest list names.

    Attestation manifests (BuildKit's `unknown/unknown` entries) are not platforms a node can run.
    """
    platforms = []
    for entry in index.manifests or []:
        platform = entry.platform
        if platform is None or not platform.os or not platform.architecture:
            continue
        if "unknown" in (platform.os, platform.architecture):
            continue
        platforms.append(Platform(os=platform.os, architecture=platform.architecture, variant=platform.variant))
    return platforms


def platform_entry(index: Manifest, arch: str, os_name: str = "linux") -> Descriptor | None:
    """The index's first descriptor for `os_name/arch` (any variant), as the container runtime would pick; None without."""
    for entry in index.manifests or []:
        if entry.platform is not None and (entry.platform.os, entry.platform.architecture) == (os_name, arch):
            return entry
    return None


def config_platform(config: ImageConfig) -> Platform | None:
    """The platform an image config blob declares (`os`, `architecture`, `variant`)."""
    if not config.os or not config.architecture:
        return None
    return Platform(os=config.os, architecture=config.architecture, variant=config.variant)


def runs_on(platforms: list[Platform], arch: str, os_name: str = "linux") -> bool:
    """True when one of `platforms` runs on `os_name/arch` nodes (any arm64 variant counts: v8 is the only one)."""
    return any(p.os == os_name and p.architecture == arch for p in platforms)


def media_type(content_type: str | None, body: Manifest) -> str | None:
    """The manifest's media type: the response's Content-Type, else the body's own `mediaType`."""
    declared = (content_type or "").split(";", 1)[0].strip()
    if declared in MANIFEST_ACCEPT:
        return declared
    inner = body.media_type
    return inner if inner in MANIFEST_ACCEPT else None


def registry_errors(body: object) -> str | None:
    """`CODE: message` of a registry error body `{"errors": [{"code", "message", "detail"}]}`; None for another
    shape (the caller then names the HTTP status)."""
    try:
        errors = ErrorBody.model_validate(body).errors
    except ValidationError:
        return None
    return "; ".join(f"{e.code}: {e.message}" for e in errors) or None
