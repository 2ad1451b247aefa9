"""A registry token issuer on 127.0.0.1 (https): the `realm` of a distribution registry run with token auth.

The real registry verifies what this issues, so it is written to distribution's spec, not to our client:
docs/content/spec/auth/token.md (`GET realm?service=...&scope=repository:<name>:<actions>`, answered with
`{"token", "access_token", "expires_in", "issued_at"}`) and docs/content/spec/auth/jwt.md (an ES256 JWT whose
header carries the signing certificate in `x5c`, chained to the registry's `rootcertbundle`; claims `iss`, `sub`,
`aud` = the service, `exp`, `nbf`, `iat`, `jti` and `access`), verified by registry/auth/token/token.go. Like Docker
Hub's auth.docker.io, an anonymous caller gets `pull` on public repositories and a token with no access for anything
else (the registry then answers 401 insufficient_scope); Basic credentials of a pusher get what they ask for. A
stand-in because no token server ships with distribution, and Docker Hub's cannot be reached from a test.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import ssl
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from tests.pin.serving import Serving
from tests.pin.tls import Issued

SERVICE = "k3deploy-test-registry"
ISSUER = "k3deploy-test-token-issuer"
_SCOPE = re.compile(r"^repository:(?P<name>[a-z0-9]+(?:[._/-][a-z0-9]+)*):(?P<actions>[a-z,*]+)$")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_jwt(claims: dict, signer: Issued) -> str:
    """An ES256 JWS compact serialisation of `claims` with the signer's certificate in `x5c`."""
    header = {
        "typ": "JWT",
        "alg": "ES256",
        "x5c": [base64.b64encode(signer.cert.public_bytes(serialization.Encoding.DER)).decode()],
    }
    signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    r, s = decode_dss_signature(signer.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class TokenIssuer(Serving):
    """Who may pull and push what; `url` (the realm is `url + '/token'`) once started; `requests` as received."""

    def __init__(self, signer: Issued, tls: Issued) -> None:
        super().__init__()
        self.signer = signer
        self.tls = tls
        #: Repositories anonymous callers may pull; a repository not listed is private or missing.
        self.public: set[str] = set()
        #: `user:password` of Basic credentials granted every action asked for.
        self.pushers: set[str] = {"pusher:" + secrets.token_hex(8)}
        self.requests: list[tuple[str, dict[str, str]]] = []

    @property
    def realm(self) -> str:
        """The realm a registry's challenge names."""
        return f"{self.url}/token"

    @property
    def pusher(self) -> tuple[str, str]:
        """Basic credentials (user, password) that may push anywhere."""
        user, _, password = next(iter(self.pushers)).partition(":")
        return user, password

    def start(self) -> TokenIssuer:
        """Serve https on an ephemeral 127.0.0.1 port in a daemon thread."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls.cert_path, self.tls.key_path)
        self.serve(_Handler, tls=context)
        return self

    def grant(self, scopes: list[str], credentials: str | None) -> list[dict]:
        """The `access` claim for `scopes` requested by the caller with Basic `credentials` (None: anonymous)."""
        access = []
        for scope in scopes:
            match = _SCOPE.match(scope)
            if match is None:
                raise ValueError(scope)
            wanted = match["actions"].split(",")
            if credentials in self.pushers:
                actions = wanted
            else:
                actions = ["pull"] if "pull" in wanted and match["name"] in self.public else []
            access.append({"type": "repository", "name": match["name"], "actions": actions})
        return access


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet; tests read `issuer.requests`."""

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """`/token?service=...&scope=...` (scope may repeat)."""
        issuer: TokenIssuer = self.server.owner  # type: ignore[attr-defined]
        split = urlsplit(self.path)
        issuer.requests.append((self.path, dict(self.headers.items())))
        if split.path != "/token":
            return self._send(404, {"details": "not found"})
        query = parse_qs(split.query)
        if query.get("service") != [SERVICE]:
            return self._send(400, {"details": f"invalid service: {query.get('service')}"})
        credentials = None
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            credentials = base64.b64decode(auth.removeprefix("Basic ")).decode()
            if credentials not in issuer.pushers:
                return self._send(401, {"details": "incorrect username or password"})
        try:
            access = issuer.grant(query.get("scope", []), credentials)
        except ValueError as exc:
            return self._send(400, {"details": f"invalid scope: {exc}"})
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": credentials.partition(":")[0] if credentials else "",
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 5,
            "iat": now,
            "jti": secrets.token_hex(8),
            "access": access,
        }
        token = sign_jwt(claims, issuer.signer)
        issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        self._send(200, {"token": token, "access_token": token, "expires_in": 300, "issued_at": issued})
