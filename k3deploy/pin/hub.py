"""Resolve a Hugging Face Hub revision (a branch or tag such as `main`) to the commit sha it points at.

The same call `huggingface_hub.HfApi.model_info(repo, revision=...)` makes (hf_api.py):
`GET {HF_ENDPOINT}/api/models/{repo_id}/revision/{quote(revision, safe='')}` with `Authorization: Bearer
$HF_TOKEN` when set; the answer's `sha` is the commit. Errors are told apart the way
`huggingface_hub.utils._http.hf_raise_for_status` does: the `X-Error-Code` header (`RepoNotFound`,
`RevisionNotFound`, `GatedRepo`), and a bare 401 on a repo URL means "missing, or private without a token".
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote, urlsplit

import httpx

from k3deploy.errors import CheckFailed, EnvironmentProblem

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 15.0
_SHA = re.compile(r"^[0-9a-f]{40}$")


def hub_endpoint() -> str:
    """`HF_ENDPOINT` (a mirror or a test server), else the public Hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


class HubClient:
    """Bounded-timeout reader of model revisions."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        headers = {"User-Agent": "k3deploy-pin"}
        token = os.environ.get("HF_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._endpoint = hub_endpoint()
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s), headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def commit(self, repo_id: str, revision: str | None) -> str:
        """The 40-hex commit `revision` (default `main`) of model `repo_id` points at now."""
        rev = revision or "main"
        url = f"{self._endpoint}/api/models/{repo_id}/revision/{quote(rev, safe='')}"
        host = urlsplit(self._endpoint).netloc
        try:
            response = self._http.get(url)
        except httpx.HTTPError as exc:
            raise EnvironmentProblem(
                f"cannot reach the Hugging Face Hub at {host}: {type(exc).__name__}: {exc}",
                hint=f"check the network path to {host}, or set HF_ENDPOINT to a mirror",
            ) from exc
        code = response.headers.get("X-Error-Code")
        if response.status_code == 200:
            try:
                sha = response.json().get("sha")
            except ValueError:
                sha = None
            if not isinstance(sha, str) or not _SHA.match(sha):
                raise EnvironmentProblem(
                    f"{host} answered {repo_id}@{rev} without a commit sha",
                    hint="HF_ENDPOINT does not point at a Hub API; check it",
                )
            return sha
        if code == "RevisionNotFound":
            raise CheckFailed(
                f"{repo_id} has no revision {rev!r} on {host}",
                hint="use a branch, tag or commit that exists (see the repo's commit history)",
            )
        if code == "GatedRepo":
            raise CheckFailed(
                f"{repo_id} on {host} is gated and the token cannot read it",
                hint="accept the model's terms on the Hub and set HF_TOKEN to a token of that account",
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
