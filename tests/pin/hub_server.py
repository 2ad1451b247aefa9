"""A Hugging Face Hub API stand-in on 127.0.0.1: `GET /api/models/{repo_id}/revision/{revision}`, and the file
listing `GET /api/models/{repo_id}/tree/{commit}` (hf_api.py `list_repo_tree`, what `snapshot_download` asks for
a commit's files: `path`, `size` and `oid` of each); it serves no file (a download that is not in the cache fails).

Imitates what huggingface_hub relies on (hf_api.py `model_info`, utils/_http.py `hf_raise_for_status`):
- the revision is one URL-quoted path segment (`refs%2Fpr%2F1`); an unquoted `/` in it does not route (404);
- a repo that does not exist, or is private and the request carries no token that can read it, is 401 with
  `X-Error-Code: RepoNotFound` (the Hub does not tell them apart);
- a token it does not know is 401 with `X-Error-Message: Invalid credentials in Authorization header`;
- an unknown revision is 404 with `X-Error-Code: RevisionNotFound` and `{"error": "Invalid rev id: ..."}`;
- a known one answers the model info with `sha`, the commit the revision points at (a 40-hex revision that
  is a commit of the repo resolves to itself, and a 7-or-more-hex prefix of exactly one commit to it, as git does);
- a renamed repo answers 307 with a relative `Location` to the same route under its new name (huggingface_hub
  follows only relative redirects for this reason: utils/_http.py `_httpx_follow_relative_redirects`);
- a gated repo is 401 `X-Error-Code: GatedRepo` without a token and 403 `GatedRepo` with a token whose account
  was not granted access (the messages hf_raise_for_status shows users).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from tests.pin.serving import Serving

_ROUTE = re.compile(r"^/api/models/(?P<org>[\w.-]+)/(?P<name>[\w.-]+)/revision/(?P<rev>[^/]+)$")
_TREE = re.compile(r"^/api/models/(?P<org>[\w.-]+)/(?P<name>[\w.-]+)/tree/(?P<rev>[0-9a-f]{40})$")


@dataclass
class HubModel:
    """One repo: its refs (branch or tag -> commit) and who may read it."""

    refs: dict[str, str]
    private: bool = False
    readers: set[str] = field(default_factory=set)
    #: Gated: only tokens in `readers` may read it; the others are told so, not that it is missing.
    gated: bool = False
    #: Path -> size of every file of every commit (the tree listing).
    files: dict[str, int] = field(default_factory=lambda: {"config.json": 2})


class Hub(Serving):
    """The Hub's repos and tokens; `url` once started."""

    def __init__(self) -> None:
        super().__init__()
        self.models: dict[str, HubModel] = {}
        #: Old repo id -> new repo id.
        self.renames: dict[str, str] = {}
        self.tokens: set[str] = set()
        self.requests: list[tuple[str, dict[str, str]]] = []

    def start(self) -> Hub:
        """Serve on an ephemeral 127.0.0.1 port in a daemon thread."""
        self.serve(_Handler)
        return self


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet; tests read `hub.requests`."""

    def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_list(self, body: list[dict]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """The model-info-at-revision route."""
        hub: Hub = self.server.owner  # type: ignore[attr-defined]
        raw_path = urlsplit(self.path).path
        hub.requests.append((raw_path, dict(self.headers.items())))
        tree = _TREE.match(raw_path)
        if tree:
            model = self.server.owner.models.get(f"{tree['org']}/{tree['name']}")  # type: ignore[attr-defined]
            if model is None or model.private or model.gated or tree["rev"] not in model.refs.values():
                return self._send(404, {"error": "Not found"}, {"X-Error-Code": "RevisionNotFound"})
            listing = [{"type": "file", "path": p, "size": n, "oid": "0" * 40} for p, n in sorted(model.files.items())]
            return self._send_list(listing)
        match = _ROUTE.match(raw_path)
        if not match:
            return self._send(404, {"error": "Sorry, we can't find the page you are looking for."})
        token = None
        auth = self.headers.get("Authorization")
        if auth:
            scheme, _, token = auth.partition(" ")
            if scheme != "Bearer" or token not in hub.tokens:
                message = "Invalid credentials in Authorization header"
                return self._send(401, {"error": message}, {"X-Error-Message": message})
        repo_id = f"{match['org']}/{match['name']}"
        if repo_id in hub.renames:
            location = f"/api/models/{hub.renames[repo_id]}/revision/{match['rev']}"
            return self._send(307, {"message": f"Redirecting to {location}"}, {"Location": location})
        model = hub.models.get(repo_id)
        if model is None or (model.private and token not in model.readers):
            return self._send(
                401,
                {"error": "Repository not found"},
                {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"},
            )
        if model.gated and token not in model.readers:
            if token is None:
                status, message = 401, f"Repo model {repo_id} is gated. You must be authenticated to access it."
            else:
                status, message = (
                    403,
                    f"Access to model {repo_id} is restricted and you are not in the authorized list. "
                    f"Visit https://huggingface.co/{repo_id} to ask for access.",
                )
            return self._send(status, {"error": message}, {"X-Error-Code": "GatedRepo", "X-Error-Message": message})
        rev = unquote(match["rev"])
        commits = set(model.refs.values())
        sha = model.refs.get(rev) or (rev if rev in commits else None)
        if sha is None and re.fullmatch(r"[0-9a-f]{7,39}", rev):
            prefixed = [c for c in commits if c.startswith(rev)]
            sha = prefixed[0] if len(prefixed) == 1 else None
        if sha is None:
            message = f"Invalid rev id: {rev}"
            return self._send(404, {"error": message}, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": message})
        self._send(
            200,
            {
                "_id": "0" * 24,
                "id": repo_id,
                "modelId": repo_id,
                "sha": sha,
                "private": model.private,
                "gated": "manual" if model.gated else False,
                "disabled": False,
                "siblings": [{"rfilename": "config.json"}],
            },
        )
