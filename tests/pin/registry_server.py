"""A small OCI distribution registry on 127.0.0.1, as strict as the real one where `pin` depends on it.

Imitates distribution/distribution:
- registry/handlers/manifests.go (GetManifest): the Accept header decides what a client may receive. An
  OCI index or OCI manifest the client did not accept is MANIFEST_UNKNOWN ("OCI index found, but accept
  header does not support OCI indexes"); a Docker manifest list asked for by tag by a client that does not
  accept lists is rewritten to its linux/amd64 image (MANIFEST_UNKNOWN when it has none). Answers carry
  `Content-Type`, `Docker-Content-Digest` (the digest of the exact bytes) and `Etag`.
- registry/api/errcode/register.go: error bodies `{"errors": [{"code", "message", "detail"}]}` with
  MANIFEST_UNKNOWN / NAME_UNKNOWN / BLOB_UNKNOWN (404), UNAUTHORIZED (401), UNSUPPORTED (405).
- registry/auth/token/accesscontroller.go: with auth on, a request without a token granting `pull` on the
  repository gets 401 and `WWW-Authenticate: Bearer realm="...",service="...",scope="repository:<name>:pull"`
  (`,error="insufficient_scope"` when a token was sent but does not cover it).
- docs/content/spec/auth/token.md: the token endpoint takes `service` and `scope`, refuses a wrong service,
  and, like Docker Hub's, grants an anonymous token with no access for a repository that does not exist.
Blobs are answered with a 307 to a storage path, as registries backed by object storage do.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.pin.serving import Serving

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
_CONFIG_TYPES = {
    OCI_MANIFEST: "application/vnd.oci.image.config.v1+json",
    DOCKER_MANIFEST: "application/vnd.docker.container.image.v1+json",
}
SERVICE = "test-registry"
_ROUTE = re.compile(r"^/v2/(?P<name>[a-z0-9]+(?:[._/-][a-z0-9]+)*)/(?P<kind>manifests|blobs)/(?P<ref>[^/]+)$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_SCOPE = re.compile(r"^repository:(?P<name>[a-z0-9]+(?:[._/-][a-z0-9]+)*):(?P<actions>[a-z,*]+)$")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class _Repo:
    tags: dict[str, str] = field(default_factory=dict)


class Registry(Serving):
    """The registry's content and settings; `url` once started."""

    def __init__(self, *, auth: bool = False) -> None:
        super().__init__()
        self.auth = auth
        self.repos: dict[str, _Repo] = {}
        self.manifests: dict[str, tuple[str, bytes]] = {}
        self.blobs: dict[str, bytes] = {}
        self.tokens: dict[str, set[str]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        #: Serve manifests with one byte changed but the stored digest: what a rewriting proxy would do.
        self.tamper = False

    # content -------------------------------------------------------------------------------------
    def _put_manifest(self, media_type: str, body: dict) -> str:
        data = json.dumps(body, indent=3).encode()  # registries serve the pushed bytes verbatim, whitespace included
        digest = _digest(data)
        self.manifests[digest] = (media_type, data)
        return digest

    def push_image(
        self, name: str, tag: str | None, arch: str, media_type: str = OCI_MANIFEST, os_name: str = "linux"
    ) -> str:
        """Store a single-platform image (config blob + manifest); tag it; return the manifest digest."""
        config = json.dumps(
            {"architecture": arch, "os": os_name, "rootfs": {"type": "layers", "diff_ids": []}}
        ).encode()
        self.blobs[_digest(config)] = config
        body = {
            "schemaVersion": 2,
            "mediaType": media_type,
            "config": {"mediaType": _CONFIG_TYPES[media_type], "digest": _digest(config), "size": len(config)},
            "layers": [],
        }
        digest = self._put_manifest(media_type, body)
        repo = self.repos.setdefault(name, _Repo())
        if tag:
            repo.tags[tag] = digest
        return digest

    def push_index(
        self, name: str, tag: str, arches: list[str], media_type: str = OCI_INDEX, attestation: bool = True
    ) -> str:
        """Store a multi-platform index (or Docker manifest list) over one image per arch; return its digest."""
        child_type = OCI_MANIFEST if media_type == OCI_INDEX else DOCKER_MANIFEST
        entries = []
        for arch in arches:
            child = self.push_image(name, None, arch, child_type)
            entries.append(
                {
                    "mediaType": child_type,
                    "digest": child,
                    "size": len(self.manifests[child][1]),
                    "platform": {"architecture": arch, "os": "linux", **({"variant": "v8"} if arch == "arm64" else {})},
                }
            )
        if attestation and media_type == OCI_INDEX:  # BuildKit's provenance entry: not a runnable platform
            att = self.push_image(name, None, "unknown", OCI_MANIFEST, os_name="unknown")
            entries.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": att,
                    "size": len(self.manifests[att][1]),
                    "platform": {"architecture": "unknown", "os": "unknown"},
                    "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
                }
            )
        digest = self._put_manifest(media_type, {"schemaVersion": 2, "mediaType": media_type, "manifests": entries})
        self.repos.setdefault(name, _Repo()).tags[tag] = digest
        return digest

    # lifecycle -----------------------------------------------------------------------------------
    def start(self) -> Registry:
        """Serve on an ephemeral 127.0.0.1 port in a daemon thread."""
        self.serve(_Handler)
        return self


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet; tests read `registry.requests`."""

    @property
    def reg(self) -> Registry:
        return self.server.owner  # type: ignore[attr-defined]

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(
        self, status: int, code: str, message: str, detail: object = None, headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps({"errors": [{"code": code, "message": message, "detail": detail}]}).encode()
        self._send(status, body, {"Content-Type": "application/json; charset=utf-8", **(headers or {})})

    def do_GET(self) -> None:
        """Manifests, blobs, the token endpoint and /v2/."""
        self._get(head=False)

    def do_HEAD(self) -> None:
        """HEAD as GET without a body."""
        self._get(head=True)

    def do_PUT(self) -> None:
        """This registry is read-only, like distribution with readonly mode on."""
        self._error(405, "UNSUPPORTED", "The operation is unsupported.")

    def _get(self, head: bool) -> None:
        split = urlsplit(self.path)
        self.reg.requests.append((split.path, {k: v for k, v in self.headers.items()}))
        if split.path == "/token":
            return self._token(parse_qs(split.query))
        if split.path.startswith("/_storage/"):
            digest = split.path.removeprefix("/_storage/")
            if digest in self.reg.blobs:
                return self._send(200, self.reg.blobs[digest], {"Content-Type": "application/octet-stream"}, head)
            return self._error(404, "BLOB_UNKNOWN", "blob unknown to registry", digest)
        if split.path == "/v2/":
            return self._send(200, b"{}", {"Content-Type": "application/json"}, head)
        match = _ROUTE.match(split.path)
        if not match or not (_TAG.match(match["ref"]) or _DIGEST.match(match["ref"])):
            return self._send(404, b"404 page not found\n", {"Content-Type": "text/plain; charset=utf-8"}, head)
        name = match["name"]
        if self.reg.auth and not self._authorized(name):
            return None
        repo = self.reg.repos.get(name)
        if repo is None:
            return self._error(404, "NAME_UNKNOWN", "repository name not known to registry", {"name": name})
        if match["kind"] == "blobs":
            if match["ref"] not in self.reg.blobs:
                return self._error(404, "BLOB_UNKNOWN", "blob unknown to registry", match["ref"])
            return self._send(307, b"", {"Location": f"/_storage/{match['ref']}"}, head)
        return self._manifest(repo, match["ref"], head)

    def _accepts(self) -> set[str]:
        accepted = set()
        for value in self.headers.get_all("Accept") or []:
            for item in value.split(","):
                accepted.add(item.split(";", 1)[0].strip())
        return accepted

    def _manifest(self, repo: _Repo, ref: str, head: bool) -> None:
        tag = None if _DIGEST.match(ref) else ref
        digest = repo.tags.get(ref) if tag else ref
        if digest is None:
            return self._error(404, "MANIFEST_UNKNOWN", "manifest unknown", {"Tag": tag})
        if digest not in self.reg.manifests:
            return self._error(404, "MANIFEST_UNKNOWN", "manifest unknown", {"Revision": digest})
        media_type, data = self.reg.manifests[digest]
        accepts = self._accepts()
        if media_type == OCI_MANIFEST and OCI_MANIFEST not in accepts:
            return self._error(
                404, "MANIFEST_UNKNOWN", "OCI manifest found, but accept header does not support OCI manifests"
            )
        if media_type == OCI_INDEX and OCI_INDEX not in accepts:
            return self._error(
                404, "MANIFEST_UNKNOWN", "OCI index found, but accept header does not support OCI indexes"
            )
        if tag and media_type == DOCKER_LIST and DOCKER_LIST not in accepts:
            entries = json.loads(data)["manifests"]
            amd64 = [
                e["digest"]
                for e in entries
                if e["platform"]["architecture"] == "amd64" and e["platform"]["os"] == "linux"
            ]
            if not amd64:
                return self._error(404, "MANIFEST_UNKNOWN", "manifest unknown")
            digest = amd64[0]
            media_type, data = self.reg.manifests[digest]
            if DOCKER_MANIFEST not in accepts:
                return self._error(400, "MANIFEST_INVALID", "Schema 2 manifest not supported by client")
        if self.reg.tamper:
            data = data + b" "
        self._send(
            200, data, {"Content-Type": media_type, "Docker-Content-Digest": digest, "Etag": f'"{digest}"'}, head
        )

    # auth ----------------------------------------------------------------------------------------
    def _authorized(self, name: str) -> bool:
        auth = self.headers.get("Authorization", "")
        challenge = f'Bearer realm="{self.reg.url}/token",service="{SERVICE}",scope="repository:{name}:pull"'
        if not auth:
            self._error(
                401,
                "UNAUTHORIZED",
                "authentication required",
                [{"Type": "repository", "Name": name, "Action": "pull"}],
                {"WWW-Authenticate": challenge},
            )
            return False
        scheme, _, token = auth.partition(" ")
        if scheme != "Bearer" or token not in self.reg.tokens:
            self._error(
                401,
                "UNAUTHORIZED",
                "authentication required",
                None,
                {"WWW-Authenticate": challenge + ',error="invalid_token"'},
            )
            return False
        if name not in self.reg.tokens[token]:
            self._error(
                401,
                "UNAUTHORIZED",
                "authentication required",
                [{"Type": "repository", "Name": name, "Action": "pull"}],
                {"WWW-Authenticate": challenge + ',error="insufficient_scope"'},
            )
            return False
        return True

    def _token(self, query: dict[str, list[str]]) -> None:
        if query.get("service") != [SERVICE]:
            body = json.dumps({"details": "invalid service"}).encode()
            return self._send(400, body, {"Content-Type": "application/json"})
        granted: set[str] = set()
        for scope in query.get("scope", []):
            for item in scope.split(" "):
                match = _SCOPE.match(item)
                if not match:
                    body = json.dumps({"details": f"invalid scope {item!r}"}).encode()
                    return self._send(400, body, {"Content-Type": "application/json"})
                if "pull" in match["actions"].split(",") and match["name"] in self.reg.repos:
                    granted.add(match["name"])
        token = secrets.token_hex(16)
        self.reg.tokens[token] = granted
        body = json.dumps(
            {"token": token, "access_token": token, "expires_in": 300, "issued_at": "2026-01-01T00:00:00Z"}
        ).encode()
        self._send(200, body, {"Content-Type": "application/json"})
