"""Connect to a cluster the kubectl way, and translate API errors once, at this boundary.

Config order: --kubeconfig, then KUBECONFIG, then ~/.kube/config, then in-cluster (when run as a Job).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from k3deploy.errors import CheckFailed, EnvironmentProblem, K3DeployError, UsageError


@dataclass(frozen=True)
class KubeOptions:
    """The kubectl-style connection options of a command."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None


def connect(options: KubeOptions) -> Any:
    """Return a configured `kubernetes.client.ApiClient`; raise EnvironmentProblem when no config is found."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    path = options.kubeconfig or os.environ.get("KUBECONFIG")
    try:
        if path or os.path.exists(os.path.expanduser("~/.kube/config")) or options.context:
            config.load_kube_config(config_file=path, context=options.context, client_configuration=configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, FileNotFoundError, OSError) as exc:
        raise EnvironmentProblem(
            f"no usable Kubernetes configuration: {exc}",
            hint="pass --kubeconfig FILE, set KUBECONFIG, or run inside a cluster",
        ) from None
    # Fail fast on an unreachable server instead of urllib3's long default retries.
    configuration.retries = 0
    return client.ApiClient(configuration)


def server_message(exc: Any) -> str:
    """The API server's own message from an ApiException body, or its reason."""
    body = getattr(exc, "body", None)
    if body:
        try:
            data = json.loads(body)
            if isinstance(data, dict) and data.get("message"):
                return str(data["message"])
        except (ValueError, TypeError):
            pass
    return str(getattr(exc, "reason", None) or exc)


def is_schema_mismatch(exc: Any) -> bool:
    """A server-side apply the API server could not convert to its schema (undeclared field, wrong type): it answers
    500 "failed to create typed patch object" (kubernetes/kubernetes#139253), which no retry will change.
    """
    return getattr(exc, "status", None) == 500 and "failed to create typed patch object" in server_message(exc)


def _where_and_why(exc: BaseException) -> str:
    """' at HOST:PORT: reason' from urllib3's retry wrapper, without the pool and connection reprs it repeats."""
    pool = getattr(exc, "pool", None)
    where = f" at {pool.host}:{pool.port}" if getattr(pool, "host", None) else ""
    reason = getattr(exc, "reason", None)
    cause = reason if isinstance(reason, BaseException) else exc
    text = str(cause)
    # NewConnectionError reads "HTTPConnection(host=..., port=...): Failed to establish ...: [Errno 111] ..."
    if text.startswith(("HTTPConnection(", "HTTPSConnection(")) and "): " in text:
        text = text.split("): ", 1)[1]
    return f"{where}: {text}"


def translate(exc: BaseException, action: str) -> K3DeployError:
    """Map a kubernetes/urllib3 exception raised while doing `action` to one domain error (keeps the server's words)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(exc, K3DeployError):
        return exc
    if isinstance(exc, ApiException):
        status = exc.status or 0
        message = server_message(exc)
        if status == 401:
            return EnvironmentProblem(f"{action}: unauthorized: {message}", hint="refresh your credentials or kubeconfig")
        if status == 403 and message.startswith("admission webhook "):
            # A validating webhook (e.g. the LWS controller's) refused the object: not a permission problem.
            return UsageError(f"{action}: rejected by an admission webhook: {message}",
                              hint="the object breaks a rule of the controller that owns its kind; fix the setting it names")
        if status == 403:
            return EnvironmentProblem(f"{action}: forbidden: {message}", hint="ask for RBAC permission for this verb and resource")
        if status == 404:
            return CheckFailed(f"{action}: not found: {message}", hint="check the name, namespace and that the CRD is installed")
        if status == 409:
            return CheckFailed(f"{action}: conflict: {message}", hint="another field manager owns these fields; --force-conflicts takes them over")
        if status == 422 or status == 400:
            return UsageError(f"{action}: rejected by the API server: {message}", hint="the object is invalid for this cluster's schema")
        if is_schema_mismatch(exc):
            return UsageError(f"{action}: the object does not fit the cluster's schema for its kind: {message}",
                              hint="the installed CRD may be another version than k3deploy renders for; compare "
                                   "`kubectl get crd -o yaml` with the README's requirements")
        return EnvironmentProblem(f"{action}: API server answered {status}: {message}", hint="check the cluster's health and retry")
    if isinstance(exc, (HTTPError, OSError)):
        return EnvironmentProblem(f"{action}: Kubernetes API unreachable{_where_and_why(exc)}",
                                  hint="check --kubeconfig/--context and that the API server is up")
    return EnvironmentProblem(f"{action}: {type(exc).__name__}: {exc}", hint="re-run with --debug for details")
