"""Resolve a Hugging Face Hub revision (a branch or tag such as `main`) to the commit sha it points at.

The same call `huggingface_hub.HfApi.model_info(repo, revision=...)` makes (hf_api.py):
`GET {HF_ENDPOINT}/api/models/{repo_id}/revision/{quote(revision, safe='')}` with `Authorization: Bearer
$HF_TOKEN` when set; the answer's `sha` is the commit. Errors are told apart the way
`huggingface_hub.utils._http.hf_raise_for_status` does: the `X-Error-Code` header (`RepoNotFound`,
`RevisionNotFound`, `GatedRepo`), and a bare 401 on a repo URL means "missing, or private without a token".
A gated repo is 401 `GatedRepo` without a token and 403 `GatedRepo` with one whose account was not granted access.
A renamed repo answers with a redirect to its new name on the same host (huggingface_hub follows relative redirects
only: utils/_http.py `_httpx_follow_relative_redirects`); the commit is the new name's, and the new name is returned
so the pinned profile names the repo that owns it, not a name someone else may take.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urljoin, urlsplit

import httpx

from k3deploy.errors import CheckFailed, EnvironmentProblem, TooLarge, UsageError
from k3deploy.kube.deadline import Deadline
from k3deploy.net.capped import get_capped
from k3deploy.pin.answers import HubRevisionAnswer, parse_answer
from k3deploy.redact import redact_url, url_error

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 15.0
_SHA = re.compile(r"^[0-9a-f]{40}$")
_SHORT_SHA = re.compile(r"^[0-9a-f]{7,39}$")
_REVISION_PATH = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/revision/(?P<rev>[^/]+)$")
#: Renames chain rarely; more hops than this is a redirect loop.
MAX_REDIRECTS = 5
#: A revision answer is a few KiB (the repo's file list); anything this large is not one.
MAX_ANSWER_BYTES = 16 << 20


@dataclass(frozen=True)
class HubRevision:
    """A resolved revision: the repo id that answered (the new name of a renamed repo) and the commit."""

    repo_id: str
    sha: str


def hub_endpoint() -> str:
    """`HF_ENDPOINT` (a mirror or a test server), else the public Hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


class HubClient:
    """Bounded-timeout reader of model revisions."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, deadline: Deadline | None = None) -> None:
        self._timeout_s = timeout_s
        #: The whole client's bound (`pin --timeout`); without one, each request gets 4 timeouts.
        self._deadline = deadline
        headers = {"User-Agent": "k3deploy-pin"}
        token = os.environ.get("HF_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._endpoint = hub_endpoint()
        try:
            parts = urlsplit(self._endpoint)
            parts.port  # noqa: B018 -- raises ValueError for a port out of range
        except ValueError as exc:
            raise UsageError(
                f"HF_ENDPOINT {redact_url(self._endpoint)!r} is not a URL: {url_error(exc, self._endpoint)}",
                hint="set it to http(s)://host[:port]",
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"HF_ENDPOINT {redact_url(self._endpoint)!r} is not an http(s) URL",
                hint="set it to http(s)://host[:port]",
            )
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s), headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve(self, repo_id: str, revision: str | None) -> HubRevision:
        """The commit `revision` (default `main`) of `repo_id` points at, and the repo's id now (after a rename)."""
        rev = revision or "main"
        url = f"{self._endpoint}/api/models/{repo_id}/revision/{quote(rev, safe='')}"
        host = urlsplit(self._endpoint).netloc
        answered_by = repo_id
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response, body = get_capped(
                    self._http,
                    url,
                    limit=MAX_ANSWER_BYTES,
                    error_limit=MAX_ANSWER_BYTES,
                    deadline=self._deadline or Deadline(4 * self._timeout_s),
                    read_timeout_s=self._timeout_s,
                )
            except TooLarge:
                raise EnvironmentProblem(
                    f"{host} answered {repo_id}@{rev} with over {MAX_ANSWER_BYTES} bytes; stopped reading",
                    hint="HF_ENDPOINT does not point at a Hub API; check it",
                ) from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise EnvironmentProblem(
                    f"cannot reach the Hugging Face Hub at {host}: {type(exc).__name__}: {exc}",
                    hint=f"check the network path to {host}, or set HF_ENDPOINT to a mirror",
                ) from exc
            if not response.is_redirect:
                break
            target = urlsplit(urljoin(url, response.headers.get("Location", "")))
            moved = _REVISION_PATH.match(target.path)
            if target.netloc != urlsplit(url).netloc or moved is None:
                raise EnvironmentProblem(
                    f"{host} redirected {repo_id}@{rev} to {target.geturl()}, not to a model of the same Hub",
                    hint="HF_ENDPOINT does not point at a Hub API; check it",
                )
            answered_by = unquote(moved["repo"])
            url = target.geturl()
        else:
            raise EnvironmentProblem(
                f"{host} redirected {repo_id}@{rev} more than {MAX_REDIRECTS} times",
                hint="report it to the Hub; retry later",
            )
        sha = self._check(response, body, answered_by, rev, host)
        if _SHORT_SHA.match(rev) and not sha.startswith(rev):
            raise CheckFailed(
                f"{answered_by}: {rev!r} resolved to {sha}, which is not the commit it abbreviates",
                hint="write the full 40-hex commit from the repo's commit history",
            )
        return HubRevision(repo_id=answered_by, sha=sha)

    def _check(self, response: httpx.Response, body: bytes, repo_id: str, rev: str, host: str) -> str:
        """The commit of a 200 answer; the Hub's error codes as exit 1, anything else as exit 3."""
        code = response.headers.get("X-Error-Code")
        if response.status_code == 200:
            try:
                answer = json.loads(body)
            except (ValueError, RecursionError):
                answer = None
            if not isinstance(answer, dict) or "sha" not in answer:
                raise EnvironmentProblem(
                    f"{host} answered {repo_id}@{rev} without a commit sha",
                    hint="HF_ENDPOINT does not point at a Hub API; check it",
                )
            sha = parse_answer(HubRevisionAnswer, answer, f"{host}'s answer for {repo_id}@{rev}").sha
            if not _SHA.match(sha):
                raise EnvironmentProblem(
                    f"{host} answered {repo_id}@{rev} without a commit sha",
                    hint="HF_ENDPOINT does not point at a Hub API; check it",
                )
            return sha
        if code == "RevisionNotFound":
            raise CheckFailed(
                f"{repo_id} has no revision {rev!r} on {host}",
                hint="write the full 40-hex commit (see the repo's commit history)"
                if _SHORT_SHA.match(rev)
                else "use a branch, tag or commit that exists (see the repo's commit history)",
            )
        if code == "GatedRepo":
            page = f"{self._endpoint}/{repo_id}"
            said = response.headers.get("X-Error-Message") or f"HTTP {response.status_code}"
            if "Authorization" not in self._http.headers:
                raise CheckFailed(
                    f"{repo_id} on {host} is gated and no HF_TOKEN is set ({said})",
                    hint=f"accept the model's terms at {page}, then set HF_TOKEN to a read token of that account",
                )
            raise CheckFailed(
                f"{repo_id} on {host} is gated and HF_TOKEN's account has not been granted access ({said})",
                hint=f"request access at {page} with the account HF_TOKEN belongs to, or set HF_TOKEN to a token of one that has it",
            )
        if code == "RepoNotFound" or response.status_code in (401, 404):
            hint = (
                "check the repo id; if it is private, set HF_TOKEN"
                if "Authorization" not in self._http.headers
                else "check the repo id, and that HF_TOKEN can read it"
            )
            raise CheckFailed(f"model repo {repo_id} not found on {host} (HTTP {response.status_code})", hint=hint)
        raise EnvironmentProblem(
            f"{host} answered HTTP {response.status_code} for {repo_id}@{rev}",
            hint="retry later, or set HF_ENDPOINT to a mirror",
        )
