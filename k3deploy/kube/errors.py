"""What the Kubernetes API answered (or that it did not), read at the kube boundary: its Status object, its message,
whether trying again may help. The error it becomes is errors.py's `KubeError` (made by `kube_error` in
kube/client.py `translate`, which chooses the message, hint and exit code).
"""

from __future__ import annotations

import json
from typing import Any

from k3deploy.kobject import KubeObject

#: HTTP statuses that mean "try again": throttled, or the server (or a proxy in front of it) hiccuped.
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


def status_body(exc: Any) -> KubeObject:
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
