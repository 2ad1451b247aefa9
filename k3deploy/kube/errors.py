"""`KubeError`: what the Kubernetes API answered (or that it did not), typed once at the kube boundary.

Modelled on kr8s's `ServerError` (kr8s-org/kr8s, kr8s/_exceptions.py), which keeps the API server's message
and its `Status` object beside the exception instead of a bare string. Here `status` is the HTTP status
(0 when no answer came), `reason` the Status object's machine-readable reason (`Conflict`, `Invalid`,
`Expired`, ...), `body` the decoded Status object, so rollout/ reads conflicts and immutable fields from it
without touching the client library's exception types. The message, hint and exit code are chosen where it
is raised (kube/client.py `translate`); the CLI ends with that exit code.
"""

from __future__ import annotations

import json
from typing import Any

from k3deploy.errors import EXIT_FAILED, EXIT_USAGE, CheckFailed, EnvironmentProblem, K3DeployError, UsageError

#: HTTP statuses that mean "try again": throttled, or the server (or a proxy in front of it) hiccuped.
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


class KubeError(K3DeployError):
    """An error answer of the Kubernetes API server (or none: `status` 0), with its Status object."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        status: int,
        reason: str = "",
        body: dict[str, Any] | None = None,
        transient: bool = False,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message, hint, exit_code=exit_code)
        #: HTTP status of the answer; 0 when the connection failed before one came.
        self.status = status
        #: The Status object's `reason` (e.g. Conflict, Invalid, Expired), else the HTTP reason phrase.
        self.reason = reason
        #: The decoded Status object ({} when the body was not one).
        self.body = body or {}
        #: Trying again (or resuming a watch) may succeed: throttled, a 5xx hiccup, a dropped connection.
        self.transient = transient


class _KubeCheckFailed(KubeError, CheckFailed):
    """A KubeError that is also a CheckFailed (exit 1): not found, conflict."""


class _KubeUsageError(KubeError, UsageError):
    """A KubeError that is also a UsageError (exit 2): an object the server or a webhook refuses."""


class _KubeEnvironmentProblem(KubeError, EnvironmentProblem):
    """A KubeError that is also an EnvironmentProblem (exit 3): unreachable, unauthorized, forbidden, 5xx."""


def kube_error(
    message: str,
    hint: str | None,
    *,
    status: int,
    exit_code: int,
    reason: str = "",
    body: dict[str, Any] | None = None,
    transient: bool = False,
) -> KubeError:
    """A KubeError that is also the domain error of its exit code, so `except UsageError` still catches a 422."""
    cls = {EXIT_FAILED: _KubeCheckFailed, EXIT_USAGE: _KubeUsageError}.get(exit_code, _KubeEnvironmentProblem)
    return cls(message, hint, status=status, reason=reason, body=body, transient=transient, exit_code=exit_code)


def status_body(exc: Any) -> dict[str, Any]:
    """The Status object an ApiException carries in its body ({} when the body is not one)."""
    try:
        data = json.loads(getattr(exc, "body", None) or "{}")
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def server_message(exc: Any) -> str:
    """The API server's own message from an ApiException body, or its reason."""
    message = status_body(exc).get("message")
    if message:
        return str(message)
    return str(getattr(exc, "reason", None) or exc)


def is_schema_mismatch(exc: Any) -> bool:
    """A server-side apply the API server could not convert to its schema (undeclared field, wrong type): it answers
    500 "failed to create typed patch object" (kubernetes/kubernetes#139253), which no retry will change.
    """
    return getattr(exc, "status", None) == 500 and "failed to create typed patch object" in server_message(exc)


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: a transient HTTP status or a connection-level failure."""
    # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError, MaxRetryError, NewConnectionError

    if isinstance(exc, ApiException):
        return (exc.status or 0) in TRANSIENT_STATUSES and not is_schema_mismatch(exc)
    if isinstance(exc, MaxRetryError) and isinstance(exc.reason, NewConnectionError):
        # Nothing listens there (refused, no route): kubectl fails at once too, so do not keep the user waiting.
        return False
    return isinstance(exc, (HTTPError, ConnectionError, TimeoutError))
