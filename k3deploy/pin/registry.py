"""Resolve an image tag to its digest and platforms through the OCI distribution API, verifying every byte it reads.

`GET /v2/<name>/manifests/<ref>` with the Accept header for OCI index, Docker manifest list, OCI manifest
and Docker v2 manifest (distribution registry/handlers/manifests.go answers an OCI index or OCI manifest
with MANIFEST_UNKNOWN when the Accept header does not name it, and rewrites a manifest list to the
linux/amd64 image for a client that does not accept lists). A 401 with a `Bearer` challenge is answered
the way docker, containerd and oras do (distribution docs/content/spec/auth/token.md): an anonymous
`GET realm?service=...&scope=...`, then the same request with `Authorization: Bearer <token>`.
Every answer is read through pin/answers.py's models (a field of the wrong type is one clear error), and a digest
goes into a path only as sha256 and 64 hex digits. Every manifest and blob read is content-addressed: its digest is the sha256 of the bytes received, checked
against `Docker-Content-Digest` and against the digest that named it. A single-image manifest names no
platform itself: its config blob does. For an index, the nodes' platform image is fetched too: a mirror that
copied only some platforms lists one it does not have.

Where requests go (the registry, or a mirror from `K3DEPLOY_REGISTRY_URL` or the profile) is `mirrors.locate`'s.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from k3deploy.errors import CheckFailed, EnvironmentProblem, ImageReferenceError, ProfileError, TooLarge
from k3deploy.kube.deadline import Deadline
from k3deploy.net.capped import get_capped
from k3deploy.pin import credentials
from k3deploy.pin.answers import Descriptor, ImageConfig, Manifest, TokenAnswer, checked_digest, parse_answer
from k3deploy.pin.mirrors import REGISTRY_URL_ENV, Location, locate
from k3deploy.pin.oci import (
    IMAGE_TYPES,
    INDEX_TYPES,
    MANIFEST_ACCEPT,
    BearerChallenge,
    ImageRef,
    ImageResolution,
    Platform,
    config_platform,
    index_platforms,
    media_type,
    parse_bearer_challenge,
    parse_image,
    platform_entry,
    registry_errors,
)

#: Seconds to connect and between bytes; a registry that is slower than this is treated as unreachable.
DEFAULT_TIMEOUT_S = 15.0
#: distribution refuses manifests over 4 MiB (maxManifestBodySize); so do we, reading no further.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
#: An image config blob is a few KiB; a larger answer is not one.
MAX_CONFIG_BYTES = 4 * 1024 * 1024
#: Error bodies are read this far, for their message.
_MAX_ERROR_BYTES = 64 * 1024


class RegistryClient:
    """A registry client with bounded timeouts: anonymous, or with the credentials pin/credentials.py finds for a
    host (the environment, the Docker config); tokens are reused per realm, service, scope and credentials."""

    def __init__(
        self,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        mirrors: Mapping[str, str] | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        #: The whole client's bound (`pin --timeout`, preflight's check); without one, each request gets 4 timeouts.
        self._deadline = deadline
        self._mirrors = dict(mirrors or {})
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s), follow_redirects=True, headers={"User-Agent": "k3deploy-pin"}
        )
        self._tokens: dict[tuple[str, str | None, str | None, str | None], str] = {}
        self._auth: dict[str, str] = {}

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve(self, image: str, arch: str | None = None) -> ImageResolution:
        """Digest, media type and platforms of `image`; CheckFailed (exit 1) when the registry has no such image.

        With `arch`, an index's `linux/<arch>` image is fetched and verified as well (CheckFailed when the index
        lists it but the registry does not have it).
        """
        try:
            ref = parse_image(image)
        except ImageReferenceError as exc:
            raise ProfileError(f"image {exc}", hint="write it as [registry/]repository:tag[@sha256:<digest>]") from None
        loc = locate(ref, self._mirrors, os.environ.get(REGISTRY_URL_ENV))
        return self._resolve(ref, loc, image, arch)

    def _resolve(self, ref: ImageRef, loc: Location, image: str, arch: str | None) -> ImageResolution:
        body_bytes, content_type, digest = self._manifest(ref, loc, ref.reference, ref.digest)
        body = parse_answer(Manifest, _json(body_bytes, ref, "manifest"), f"{loc.host}: the manifest of {image}")
        kind = media_type(content_type, body)
        if kind is None:
            raise EnvironmentProblem(
                f"{loc.host}: {image} is neither an image index nor an image manifest (Content-Type {content_type!r})",
                hint="pin an image reference, not another kind of artifact",
            )
        if kind not in INDEX_TYPES:
            platforms = self._config_platforms(ref, loc, body)
            return ImageResolution(ref=ref, digest=digest, media_type=kind, platforms=platforms, layers=_layers(body))
        child = platform_entry(body, arch) if arch else None
        child_digest, layers = self._verify_child(ref, loc, child, arch or "") if child else (None, ())
        return ImageResolution(
            ref=ref,
            digest=digest,
            media_type=kind,
            platforms=index_platforms(body),
            platform_digest=child_digest,
            layers=layers,
        )

    def blob_stream(self, image: str, digest: str, deadline: Deadline) -> BlobReader:
        """A reader of one blob of `image`'s repository, streamed within `deadline`; its sha256 is checked when it
        has been read to the end (`BlobReader.verify`). CheckFailed/EnvironmentProblem as for manifests."""
        ref = parse_image(image)
        loc = locate(ref, self._mirrors, os.environ.get(REGISTRY_URL_ENV))
        digest = checked_digest(digest, f"{loc.host}: a layer of {image}")
        url = f"{loc.base}/v2/{loc.repository}/blobs/{digest}"
        headers = {}
        key = f"{loc.host}/{loc.repository}"
        if key in self._auth:  # the token the manifests were read with
            headers["Authorization"] = self._auth[key]
        left = deadline.remaining()
        timeout = httpx.Timeout(self._timeout_s if left is None else max(0.05, min(self._timeout_s, left)))
        try:
            request = self._http.build_request("GET", url, headers=headers, timeout=timeout)
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _unreachable(loc.host, exc) from exc
        if response.status_code != 200:
            response.close()
            raise CheckFailed(
                f"registry {loc.host} has no blob {digest} of {loc.repository} (HTTP {response.status_code})"
            )
        return BlobReader(response, digest, deadline)

    def _manifest(self, ref: ImageRef, loc: Location, reference: str, expected: str | None) -> tuple[bytes, str, str]:
        """(bytes, Content-Type, digest) of one manifest, its digest checked against the header and `expected`."""
        response, data = self._get(
            ref, loc, f"manifests/{reference}", {"Accept": ", ".join(MANIFEST_ACCEPT)}, MAX_MANIFEST_BYTES, "manifest"
        )
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        announced = response.headers.get("Docker-Content-Digest")
        if announced and announced.startswith("sha256:") and announced != digest:
            raise EnvironmentProblem(
                f"{loc.host}: Docker-Content-Digest {announced} of {ref.original} is not the sha256 of the manifest received ({digest})",
                hint="a proxy between here and the registry altered the manifest; pin from a direct connection",
            )
        if expected and expected != digest:
            raise EnvironmentProblem(
                f"{loc.host}: manifest received for {ref.repository}@{expected} has digest {digest}",
                hint="a proxy or mirror served different content; pin from a direct connection",
            )
        return data, response.headers.get("Content-Type", ""), digest

    def _verify_child(
        self, ref: ImageRef, loc: Location, entry: Descriptor, arch: str
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Fetch the index entry's image manifest by digest; check its digest, size, type and config platform.
        Its digest and its layers."""
        digest = checked_digest(entry.digest, f"{loc.host}: the linux/{arch} entry of {ref.original}")
        try:
            data, content_type, _ = self._manifest(ref, loc, digest, digest)
        except CheckFailed as exc:
            raise CheckFailed(
                f"{ref.original} lists linux/{arch} as {digest}, but {loc.host} does not have that image ({exc.message})",
                hint="the registry or mirror holds only part of the index: copy every platform (e.g. `crane copy --all-tags` / "
                "`skopeo copy --all`), or push the image again",
            ) from None
        size = entry.size
        if size is not None and size != len(data):
            raise EnvironmentProblem(
                f"{loc.host}: the linux/{arch} image of {ref.original} is {len(data)} bytes, the index says {size}",
                hint="a proxy or mirror served different content; pin from a direct connection",
            )
        manifest = parse_answer(
            Manifest,
            _json(data, ref, f"linux/{arch} manifest"),
            f"{loc.host}: the linux/{arch} manifest of {ref.original}",
        )
        if media_type(content_type, manifest) not in IMAGE_TYPES:
            raise EnvironmentProblem(
                f"{loc.host}: the linux/{arch} entry of {ref.original} is not an image manifest",
                hint="the index nests another index; pin the inner image",
            )
        platforms = self._config_platforms(ref, loc, manifest)
        if platforms and (platforms[0].os, platforms[0].architecture) != ("linux", arch):
            raise CheckFailed(
                f"{ref.original}: the image its index lists as linux/{arch} is built for {platforms[0]}",
                hint="the index is mislabelled; rebuild it, or choose another tag",
            )
        return digest, _layers(manifest)

    def _config_platforms(self, ref: ImageRef, loc: Location, manifest: Manifest) -> list[Platform]:
        if manifest.config is None or manifest.config.digest is None:
            return []
        digest = checked_digest(manifest.config.digest, f"{loc.host}: the config of {ref.original}")
        _, data = self._get(ref, loc, f"blobs/{digest}", {}, MAX_CONFIG_BYTES, "image config")
        received = "sha256:" + hashlib.sha256(data).hexdigest()
        if received != digest:
            raise EnvironmentProblem(
                f"{loc.host}: the image config {digest} of {ref.original} has digest {received}",
                hint="a proxy or mirror served different content; pin from a direct connection",
            )
        config = parse_answer(
            ImageConfig, _json(data, ref, "image config"), f"{loc.host}: the image config of {ref.original}"
        )
        platform = config_platform(config)
        return [platform] if platform else []

    def _get(
        self, ref: ImageRef, loc: Location, path: str, headers: dict[str, str], limit: int, what: str
    ) -> tuple[httpx.Response, bytes]:
        """GET `<base>/v2/<repository>/<path>` with the registry's token when it asks for one; errors mapped to exit codes."""
        url = f"{loc.base}/v2/{loc.repository}/{path}"
        key = f"{loc.host}/{loc.repository}"
        sent = dict(headers)
        if key in self._auth:
            sent["Authorization"] = self._auth[key]
        response, data = self._request(url, sent, loc, limit, what)
        if response.status_code == 401 and "Authorization" not in sent:
            basic = credentials.lookup(loc.host, loc.userinfo)
            challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate", ""))
            if challenge is not None:
                token = self._token(challenge, ref, loc, basic)
                self._auth[key] = f"Bearer {token}"
            elif basic is not None:  # a Basic challenge (a plain htpasswd registry or mirror)
                self._auth[key] = basic
            if key in self._auth:
                sent["Authorization"] = self._auth[key]
                response, data = self._request(url, sent, loc, limit, what)
        if response.status_code == 200:
            return response, data
        reason = registry_errors(_maybe_json(data)) or f"HTTP {response.status_code}"
        reference = path.split("/", 1)[1]
        where = f"{loc.repository}@{reference}" if reference.startswith("sha256:") else f"{loc.repository}:{reference}"
        via = f" (mirror of {ref.registry})" if loc.mirror else ""
        if response.status_code == 404:
            raise CheckFailed(
                f"registry {loc.host}{via} has no {where} ({reason})",
                hint=f"check the repository and tag of {ref.original!r} (a typo, or a tag not pushed"
                + (" or not copied to the mirror yet)" if loc.mirror else " yet)"),
            )
        if response.status_code in (401, 403):
            who = "the credentials given" if credentials.lookup(loc.host, loc.userinfo) else "anonymous access"
            raise CheckFailed(
                f"registry {loc.host}{via} refused {who} to {where} ({reason})",
                hint="the repository does not exist or is private: give a reader's credentials in K3DEPLOY_REGISTRY_URL "
                "or the Docker config (docker login), never in the profile",
            )
        raise EnvironmentProblem(
            f"registry {loc.host}{via} answered HTTP {response.status_code} for {where} ({reason})",
            hint=f"retry later, or point {REGISTRY_URL_ENV} at a mirror",
        )

    def _token(self, challenge: BearerChallenge, ref: ImageRef, loc: Location, basic: str | None) -> str:
        """A pull token from the challenge's realm: anonymous, or with the registry's Basic credentials as docker
        sends them (pin/credentials.py)."""
        scope = challenge.scope or f"repository:{loc.repository}:pull"
        cache = (challenge.realm, challenge.service, scope, basic)
        if cache in self._tokens:
            return self._tokens[cache]
        params = {"scope": scope}
        if challenge.service:
            params["service"] = challenge.service
        parts = urlsplit(challenge.realm)
        realm = Location(f"{parts.scheme}://{parts.netloc}", "")
        headers = {"Authorization": basic} if basic else {}
        response, data = self._request(challenge.realm, headers, realm, _MAX_ERROR_BYTES, "token", params=params)
        if response.status_code != 200:
            who = "a pull token for the credentials given" if basic else "an anonymous pull token"
            raise CheckFailed(
                f"token server {realm.host} refused {who} for {scope} (HTTP {response.status_code})",
                hint="the repository is private or does not exist: give a reader's credentials in K3DEPLOY_REGISTRY_URL "
                "or the Docker config (docker login)",
            )
        answer = parse_answer(TokenAnswer, _json(data, ref, "token response"), f"token server {realm.host}'s answer")
        token = answer.token or answer.access_token
        if not isinstance(token, str) or not token:
            raise EnvironmentProblem(f"token server {realm.host} answered without a token", hint="retry later")
        self._tokens[cache] = token
        return token

    def _request(
        self,
        url: str,
        headers: dict[str, str],
        loc: Location,
        limit: int,
        what: str,
        params: dict[str, str] | None = None,
    ) -> tuple[httpx.Response, bytes]:
        """One streamed GET, read to at most `limit` bytes (error bodies less) and within the client's deadline."""
        deadline = self._deadline or Deadline(4 * self._timeout_s)
        try:
            return get_capped(
                self._http,
                url,
                limit=limit,
                error_limit=_MAX_ERROR_BYTES,
                deadline=deadline,
                read_timeout_s=self._timeout_s,
                headers=headers,
                params=params,
            )
        except TooLarge:
            raise EnvironmentProblem(
                f"{loc.host}: the {what} at {url} is over {limit} bytes; stopped reading",
                hint="check the image reference; a registry serves manifests and configs of a few KiB",
            ) from None
        except httpx.InvalidURL as exc:
            raise _unreachable(loc.host, exc) from None
        except httpx.HTTPError as exc:
            raise _unreachable(loc.host, exc) from exc


class BlobReader(io.RawIOBase):
    """A streamed blob as a binary file (what tarfile reads), hashing what passes; bounded by a Deadline."""

    def __init__(self, response: httpx.Response, digest: str, deadline: Deadline) -> None:
        super().__init__()
        self._response, self._digest, self._deadline = response, digest, deadline
        self._chunks = response.iter_raw()
        self._pending = b""
        self._sha = hashlib.sha256()
        self._done = False

    def readable(self) -> bool:
        """A reader."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` from the stream; 0 at its end. TimeoutError once the deadline has passed."""
        left = self._deadline.remaining()
        if left is not None and left <= 0:
            raise TimeoutError(f"the {self._deadline.seconds:g} s budget ran out while reading blob {self._digest}")
        while not self._pending and not self._done:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                self._done = True
            self._sha.update(self._pending)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def verify(self) -> bool:
        """Read the rest and say whether the whole blob's sha256 is its digest."""
        while self.readinto(bytearray(1 << 20)):
            pass
        return "sha256:" + self._sha.hexdigest() == self._digest

    def close(self) -> None:
        """Close the response."""
        self._response.close()
        super().close()


def _layers(manifest: Manifest) -> tuple[tuple[str, str], ...]:
    """(digest, media type) of each layer of an image manifest, bottom first."""
    return tuple((str(layer.digest), layer.media_type or "") for layer in manifest.layers or [])


def _unreachable(host: str, exc: Exception) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"cannot reach registry {host}: {type(exc).__name__}: {exc}",
        hint=f"check the network path to {host} (proxy, firewall, its CA in SSL_CERT_FILE), or set {REGISTRY_URL_ENV} to a mirror",
    )


def _maybe_json(content: bytes) -> object:
    try:
        return json.loads(content)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply for the parser
        return None


def _json(content: bytes, ref: ImageRef, what: str) -> dict[str, object]:
    data = _maybe_json(content)
    if not isinstance(data, dict):
        raise EnvironmentProblem(
            f"{ref.registry}: the {what} for {ref.original} is not a JSON object",
            hint="a proxy answered instead of the registry; check the network path",
        )
    return data
