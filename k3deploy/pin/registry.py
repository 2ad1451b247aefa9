"""Resolve an image tag to its digest and platforms through the OCI distribution API.

`GET /v2/<name>/manifests/<ref>` with the Accept header for OCI index, Docker manifest list, OCI manifest
and Docker v2 manifest (distribution registry/handlers/manifests.go answers an OCI index or OCI manifest
with MANIFEST_UNKNOWN when the Accept header does not name it, and rewrites a manifest list to the
linux/amd64 image for a client that does not accept lists). A 401 with a `Bearer` challenge is answered
the way docker, containerd and oras do (distribution docs/content/spec/auth/token.md): an anonymous
`GET realm?service=...&scope=...`, then the same request with `Authorization: Bearer <token>`. The digest
is the sha256 of the bytes received, checked against `Docker-Content-Digest` when the registry sends it.
A single-image manifest names no platform itself: its config blob does.

`K3DEPLOY_REGISTRY_URL` sends every request to one base URL instead (a mirror, or a test registry).
"""

from __future__ import annotations

import hashlib
import json
import os
from urllib.parse import urlsplit

import httpx

from k3deploy.errors import CheckFailed, EnvironmentProblem, ProfileError
from k3deploy.pin.oci import (
    INDEX_TYPES,
    MANIFEST_ACCEPT,
    BearerChallenge,
    ImageRef,
    ImageResolution,
    Platform,
    ReferenceError,
    config_platform,
    index_platforms,
    media_type,
    parse_bearer_challenge,
    parse_image,
    registry_errors,
)

REGISTRY_URL_ENV = "K3DEPLOY_REGISTRY_URL"
#: Seconds to connect and between bytes; a registry that is slower than this is treated as unreachable.
DEFAULT_TIMEOUT_S = 15.0
#: distribution refuses manifests over 4 MiB (maxManifestBodySize); so do we.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def base_url(ref: ImageRef) -> str:
    """The registry API base URL: `K3DEPLOY_REGISTRY_URL` when set, else https (http for a loopback registry)."""
    override = os.environ.get(REGISTRY_URL_ENV)
    if override:
        return override.rstrip("/")
    host = ref.api_host
    scheme = "http" if host.split(":", 1)[0] in _LOCAL_HOSTS or host.startswith("[::1]") else "https"
    return f"{scheme}://{host}"


class RegistryClient:
    """An anonymous registry client with bounded timeouts; tokens are reused per realm, service and scope."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s), follow_redirects=True, headers={"User-Agent": "k3deploy-pin"}
        )
        self._tokens: dict[tuple[str, str | None, str | None], str] = {}
        self._auth: dict[str, str] = {}

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve(self, image: str) -> ImageResolution:
        """Digest, media type and platforms of `image`; CheckFailed (exit 1) when the registry has no such image."""
        try:
            ref = parse_image(image)
        except ReferenceError as exc:
            raise ProfileError(f"image {exc}", hint="write it as [registry/]repository:tag[@sha256:<digest>]") from None
        base = base_url(ref)
        url = f"{base}/v2/{ref.repository}/manifests/{ref.reference}"
        response = self._get(ref, url, {"Accept": ", ".join(MANIFEST_ACCEPT)})
        body_bytes = response.content
        if len(body_bytes) > MAX_MANIFEST_BYTES:
            raise EnvironmentProblem(
                f"{ref.api_host}: manifest of {image} is over {MAX_MANIFEST_BYTES} bytes",
                hint="check the image reference; a registry serves manifests of a few KiB",
            )
        digest = "sha256:" + hashlib.sha256(body_bytes).hexdigest()
        announced = response.headers.get("Docker-Content-Digest")
        if announced and announced.startswith("sha256:") and announced != digest:
            raise EnvironmentProblem(
                f"{ref.api_host}: Docker-Content-Digest {announced} of {image} is not the sha256 of the manifest received ({digest})",
                hint="a proxy between here and the registry altered the manifest; pin from a direct connection",
            )
        if ref.digest and ref.digest != digest:
            raise EnvironmentProblem(
                f"{ref.api_host}: manifest received for {image} has digest {digest}",
                hint="a proxy or mirror served different content; pin from a direct connection",
            )
        body = _json(body_bytes, ref, "manifest")
        kind = media_type(response.headers.get("Content-Type"), body)
        if kind is None:
            raise EnvironmentProblem(
                f"{ref.api_host}: {image} is neither an image index nor an image manifest "
                f"(Content-Type {response.headers.get('Content-Type')!r})",
                hint="pin an image reference, not another kind of artifact",
            )
        platforms = index_platforms(body) if kind in INDEX_TYPES else self._config_platforms(ref, base, body)
        return ImageResolution(ref=ref, digest=digest, media_type=kind, platforms=platforms)

    def _config_platforms(self, ref: ImageRef, base: str, manifest: dict) -> list[Platform]:
        config = manifest.get("config") or {}
        digest = config.get("digest")
        if not isinstance(digest, str):
            return []
        response = self._get(ref, f"{base}/v2/{ref.repository}/blobs/{digest}", {})
        platform = config_platform(_json(response.content, ref, "image config"))
        return [platform] if platform else []

    def _get(self, ref: ImageRef, url: str, headers: dict[str, str]) -> httpx.Response:
        """GET with the registry's token when it asks for one; errors mapped to exit codes."""
        host = urlsplit(url).netloc
        key = f"{host}/{ref.repository}"
        sent = dict(headers)
        if key in self._auth:
            sent["Authorization"] = self._auth[key]
        response = self._request(url, sent, host)
        if response.status_code == 401 and "Authorization" not in sent:
            challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate", ""))
            if challenge is not None:
                token = self._token(challenge, ref)
                self._auth[key] = f"Bearer {token}"
                sent["Authorization"] = self._auth[key]
                response = self._request(url, sent, host)
        if response.status_code == 200:
            return response
        reason = registry_errors(_maybe_json(response.content)) or f"HTTP {response.status_code}"
        where = (
            f"{ref.repository}:{ref.reference}"
            if not ref.reference.startswith("sha256:")
            else f"{ref.repository}@{ref.reference}"
        )
        if response.status_code == 404:
            raise CheckFailed(
                f"registry {ref.api_host} has no {where} ({reason})",
                hint=f"check the repository and tag of {ref.original!r} (a typo, or a tag not pushed yet)",
            )
        if response.status_code in (401, 403):
            raise CheckFailed(
                f"registry {ref.api_host} refused anonymous access to {where} ({reason})",
                hint="the repository does not exist or is private; pin a public image or pull it into a registry you can read",
            )
        raise EnvironmentProblem(
            f"registry {ref.api_host} answered HTTP {response.status_code} for {where} ({reason})",
            hint=f"retry later, or point {REGISTRY_URL_ENV} at a mirror",
        )

    def _token(self, challenge: BearerChallenge, ref: ImageRef) -> str:
        scope = challenge.scope or f"repository:{ref.repository}:pull"
        cache = (challenge.realm, challenge.service, scope)
        if cache in self._tokens:
            return self._tokens[cache]
        params = {"scope": scope}
        if challenge.service:
            params["service"] = challenge.service
        host = urlsplit(challenge.realm).netloc
        try:
            response = self._http.get(challenge.realm, params=params)
        except httpx.HTTPError as exc:
            raise _unreachable(host, exc) from exc
        if response.status_code != 200:
            raise CheckFailed(
                f"token server {host} refused an anonymous pull token for {scope} (HTTP {response.status_code})",
                hint="the repository is private or does not exist; pin a public image",
            )
        data = _json(response.content, ref, "token response")
        token = data.get("token") or data.get("access_token")
        if not isinstance(token, str) or not token:
            raise EnvironmentProblem(f"token server {host} answered without a token", hint="retry later")
        self._tokens[cache] = token
        return token

    def _request(self, url: str, headers: dict[str, str], host: str) -> httpx.Response:
        try:
            return self._http.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise _unreachable(host, exc) from exc


def _unreachable(host: str, exc: Exception) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"cannot reach registry {host}: {type(exc).__name__}: {exc}",
        hint=f"check the network path to {host} (proxy, firewall), or set {REGISTRY_URL_ENV} to a mirror",
    )


def _maybe_json(content: bytes) -> object:
    try:
        return json.loads(content)
    except ValueError:
        return None


def _json(content: bytes, ref: ImageRef, what: str) -> dict:
    data = _maybe_json(content)
    if not isinstance(data, dict):
        raise EnvironmentProblem(
            f"{ref.api_host}: the {what} for {ref.original} is not a JSON object",
            hint="a proxy answered instead of the registry; check the network path",
        )
    return data
