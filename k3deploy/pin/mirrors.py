"""Where an image is read from: its registry, or the mirror a site serves it from.

Pure: no I/O. An air-gapped site copies images into its own registry and points its nodes' container runtime at it;
`pin` and preflight read the same copies. A mirror is a base URL `scheme://host[:port][/prefix]`: the repository
`vllm/vllm-openai` of the mirrored registry is `<prefix>/vllm/vllm-openai` there (Harbor's proxy projects and a
registry holding copies of several upstreams under one prefix each; no prefix for a plain pull-through cache).
Sources, the first that names the image's registry winning:
1. `K3DEPLOY_REGISTRY_URL`: one URL for every registry, or `registry=url` pairs separated by commas;
2. the profile's `kubernetes.registry_mirrors` (registry -> URL);
3. the registry itself, over https (http for a loopback registry).
A mirror URL from the environment may carry `user:password@` (pin/credentials.py sends them; a profile's never
does: profile/names.py refuses it); the Location keeps them apart from the base URL, which messages show.
A digest is the sha256 of the manifest's bytes, so a digest read from a mirror is the upstream's: the pinned profile
keeps naming the upstream image.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from k3deploy.errors import UsageError
from k3deploy.pin.oci import DOCKER_HUB, ImageRef
from k3deploy.redact import redact_url

REGISTRY_URL_ENV = "K3DEPLOY_REGISTRY_URL"
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_DOCKER_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")


@dataclass(frozen=True)
class Location:
    """Where to send the API requests of one image: the base URL (no path) and the repository path there."""

    base: str
    repository: str
    mirror: str | None = None
    #: `user:password` of the environment's mirror URL (sent as Basic credentials, never shown).
    userinfo: str | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """host[:port] of the base URL."""
        return urlsplit(self.base).netloc


def registry_key(host: str) -> str:
    """A registry name as mirrors are keyed: lower case, Docker Hub's aliases as `docker.io`."""
    host = host.strip().lower()
    return DOCKER_HUB if host in _DOCKER_HUB_ALIASES else host


def split_mirror(url: str) -> tuple[str, str]:
    """(base URL without path or userinfo, repository prefix without slashes) of a mirror URL."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}", parts.path.strip("/")


def parse_env(value: str) -> tuple[str | None, dict[str, str]]:
    """`K3DEPLOY_REGISTRY_URL`: (one URL for all registries, or None; per-registry URLs). UsageError when malformed."""
    value = value.strip()
    if not value:
        return None, {}
    if "=" not in value:
        _check_url(value, REGISTRY_URL_ENV)
        return value, {}
    mapping: dict[str, str] = {}
    for pair in value.split(","):
        registry, sep, url = pair.partition("=")
        if not sep or not registry.strip():
            raise UsageError(
                f"{REGISTRY_URL_ENV}: {redact_url(pair.strip())!r} is not registry=url",
                hint=f"set {REGISTRY_URL_ENV} to one URL, or to pairs like docker.io=https://mirror.example/hub,ghcr.io=https://mirror.example/ghcr",
            )
        _check_url(url.strip(), f"{REGISTRY_URL_ENV} ({registry.strip()})")
        mapping[registry_key(registry)] = url.strip()
    return None, mapping


def _check_url(url: str, where: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number or out of range
    except ValueError:  # an unclosed IPv6 bracket, a bad port
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise UsageError(
            f"{where}: {redact_url(url)!r} is not an http(s) registry URL",
            hint="write it as https://host[:port][/prefix]",
        )


def locate(ref: ImageRef, profile_mirrors: Mapping[str, str], env_value: str | None) -> Location:
    """The Location of `ref`: the environment's mirror, else the profile's, else the registry itself."""
    everything, per_registry = parse_env(env_value or "")
    key = registry_key(ref.registry)
    profile = {registry_key(k): v for k, v in profile_mirrors.items()}
    mirror = everything or per_registry.get(key) or profile.get(key)
    if mirror and mirror is profile.get(key):
        _check_url(mirror, f"kubernetes.registry_mirrors ({key})")
    if mirror:
        base, prefix = split_mirror(mirror)
        netloc = urlsplit(mirror.strip()).netloc
        userinfo = netloc.rsplit("@", 1)[0] if "@" in netloc else None
        repository = f"{prefix}/{ref.repository}" if prefix else ref.repository
        return Location(base, repository, redact_url(mirror), userinfo)
    host = ref.api_host
    scheme = "http" if host.rsplit(":", 1)[0] in _LOCAL_HOSTS or host.startswith("[::1]") else "https"
    return Location(f"{scheme}://{host}", ref.repository)
