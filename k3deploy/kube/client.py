"""Connect to a cluster the kubectl way, and translate API errors once, at this boundary.

Config order: --kubeconfig, then KUBECONFIG, then ~/.kube/config, then in-cluster (when run as a Job).
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from k3deploy.errors import EXIT_ENVIRONMENT, EXIT_FAILED, EXIT_USAGE, EnvironmentProblem, K3DeployError, kube_error
from k3deploy.kube.errors import is_schema_mismatch, is_transient, server_message, status_body
from k3deploy.kube.options import KubeOptions

#: Sections of a kubeconfig (client-go's clientcmd/api/v1 Config) and the one mapping each named entry holds.
_KUBECONFIG_LISTS = {"clusters": "cluster", "contexts": "context", "users": "user"}


def _bad_kubeconfig(path: str, what: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"kubeconfig {path!r} is not a valid kubeconfig: {what}",
        hint="fix the file, or pass another with --kubeconfig (`kubectl config view` reads it too)",
    )


def check_kubeconfig_file(path: str) -> None:
    """Refuse a kubeconfig that is not YAML of client-go's Config shape, naming the file and what is wrong.

    The kubernetes library indexes into whatever it parsed, so garbage would end in a TypeError. A missing
    file is left to the library (it reports it).
    """
    if not os.path.isfile(path):
        return
    try:
        with open(path, "rb") as handle:
            data = yaml.safe_load(handle.read(16 << 20).decode("utf-8"))
    except UnicodeDecodeError:
        raise _bad_kubeconfig(path, "not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _bad_kubeconfig(path, "not valid YAML" + (f" at line {mark.line + 1}" if mark else "")) from None
    except (RecursionError, OSError) as exc:
        raise _bad_kubeconfig(path, f"unreadable ({type(exc).__name__})") from None
    if data is None:
        return  # an empty file: the library says there is no configuration
    if not isinstance(data, dict):
        raise _bad_kubeconfig(
            path, f"expected a mapping (apiVersion, clusters, contexts, users), got {type(data).__name__}"
        )
    for section, inner in _KUBECONFIG_LISTS.items():
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _bad_kubeconfig(path, f"'{section}' must be a list, got {type(entries).__name__}")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise _bad_kubeconfig(path, f"{section}[{index}] must be a mapping with a 'name'")
            if entry.get(inner) is not None and not isinstance(entry[inner], dict):
                raise _bad_kubeconfig(path, f"{section}[{index}].{inner} must be a mapping")
    if data.get("current-context") is not None and not isinstance(data["current-context"], str):
        raise _bad_kubeconfig(path, "'current-context' must be a string")


def connect(options: KubeOptions) -> Any:
    """Return a configured `kubernetes.client.ApiClient` whose every request is bounded (see kube/bounded.py);
    raise EnvironmentProblem when no config is found."""
    # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    from k3deploy.kube.bounded import BoundedApiClient  # it subclasses kubernetes' ApiClient: loaded with it
    from k3deploy.kube.exec_bound import install as install_exec_bound  # it patches kubernetes: loaded with it
    from k3deploy.kube.exec_bound import loading as exec_loading  # (the same module)

    configuration = client.Configuration()
    install_exec_bound(options.deadline)  # the credential plugin runs inside --timeout too
    path = options.kubeconfig or os.environ.get("KUBECONFIG")
    default = os.path.expanduser("~/.kube/config")
    try:
        if path or os.path.exists(default) or options.context:
            files = [p for p in (path or default).split(os.pathsep) if p]
            for name in files:
                check_kubeconfig_file(name)
            try:
                with exec_loading():
                    config.load_kube_config(
                        config_file=path, context=options.context, client_configuration=configuration
                    )
            except (TypeError, AttributeError, KeyError, ValueError) as exc:  # a shape the library does not expect
                raise _bad_kubeconfig(", ".join(files), f"{type(exc).__name__}: {exc}") from None
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, FileNotFoundError, OSError) as exc:
        raise EnvironmentProblem(
            f"no usable Kubernetes configuration: {exc}",
            hint="pass --kubeconfig FILE, set KUBECONFIG, or run inside a cluster",
        ) from None
    # Fail fast on an unreachable server instead of urllib3's long default retries.
    configuration.retries = 0
    return BoundedApiClient(configuration, options.deadline)


def _where_and_why(exc: BaseException) -> str:
    """' at HOST:PORT: reason' from urllib3's retry wrapper, without the pool and connection reprs it repeats."""
    pool = getattr(exc, "pool", None)
    where = f" at {pool.host}:{pool.port}" if pool is not None and getattr(pool, "host", None) else ""
    reason = getattr(exc, "reason", None)
    cause = reason if isinstance(reason, BaseException) else exc
    text = str(cause)
    # NewConnectionError reads "HTTPConnection(host=..., port=...): Failed to establish ...: [Errno 111] ..."
    if text.startswith(("HTTPConnection(", "HTTPSConnection(")) and "): " in text:
        text = text.split("): ", 1)[1]
    return f"{where}: {text}"


#: kube-apiserver's words when it cannot call a webhook (apiserver/pkg/admission/plugin/webhook/errors: "failed
#: calling webhook %q: %v").
_UNREACHABLE_WEBHOOK = re.compile(r'failed calling webhook "([^"]+)"')


def _answer(status: int, message: str, action: str, schema_mismatch: bool) -> tuple[str, str, int]:
    """(message, hint, exit code) for an API server's error answer."""
    if status == 401:
        return f"{action}: unauthorized: {message}", "refresh your credentials or kubeconfig", EXIT_ENVIRONMENT
    if status == 403 and "because it is being terminated" in message:
        # The NamespaceLifecycle admission plugin: a deleted namespace refuses new content until it is gone.
        return (
            f"{action}: forbidden: {message}",
            "the namespace is still being deleted (a recent `down --purge`?): "
            "wait until `kubectl get namespace` no longer lists it, then re-run",
            EXIT_ENVIRONMENT,
        )
    if status == 403 and message.startswith("admission webhook "):
        # A validating webhook (e.g. the LWS controller's) refused the object: not a permission problem.
        return (
            f"{action}: rejected by an admission webhook: {message}",
            "the object breaks a rule of the controller that owns its kind; fix the setting it names",
            EXIT_USAGE,
        )
    if status == 403:
        return f"{action}: forbidden: {message}", "ask for RBAC permission for this verb and resource", EXIT_ENVIRONMENT
    if status == 404:
        return f"{action}: not found: {message}", "check the name, namespace and that the CRD is installed", EXIT_FAILED
    if status == 409:
        return (
            f"{action}: conflict: {message}",
            "another field manager owns these fields; --force-conflicts takes them over",
            EXIT_FAILED,
        )
    if status in (400, 422):
        return (
            f"{action}: rejected by the API server: {message}",
            "the object is invalid for this cluster's schema",
            EXIT_USAGE,
        )
    webhook = _UNREACHABLE_WEBHOOK.search(message) if status == 500 else None
    if webhook is not None:
        # kube-apiserver could not reach a webhook with failurePolicy Fail: its controller is down or restarting.
        return (
            f"{action}: the API server could not call admission webhook {webhook.group(1)}: {message}",
            f"the controller serving webhook {webhook.group(1)} is down or unreachable (for LeaderWorkerSets and "
            "their pods: the LWS controller, `kubectl -n lws-system get pods`); re-run once it is back",
            EXIT_ENVIRONMENT,
        )
    if schema_mismatch:
        return (
            f"{action}: the object does not fit the cluster's schema for its kind: {message}",
            "the installed CRD may be another version than k3deploy renders for; compare "
            "`kubectl get crd -o yaml` with the versions docs/guide/profiles.md names (kubernetes.lws_version, dra_driver_version)",
            EXIT_USAGE,
        )
    return (
        f"{action}: API server answered {status}: {message}",
        "check the cluster's health and retry",
        EXIT_ENVIRONMENT,
    )


def translate(
    exc: BaseException, action: str, *, server: str | None = None, answered: str | None = None
) -> K3DeployError:
    """Map a kubernetes/urllib3 exception raised while doing `action` to one domain error (keeps the server's words).

    An API answer or a failed connection becomes a KubeError (status, reason, Status body); anything else an
    EnvironmentProblem, naming `server` (the connection's, kube/api.py KubeApi.server) when given, and quoting
    `answered`, what that connection last read (kube/bounded.py BoundedApiClient.describe_last_answer).
    """
    # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(exc, K3DeployError):
        return exc
    if isinstance(exc, ApiException):
        status = exc.status or 0
        body = status_body(exc)
        reason = str(body.get("reason") or exc.reason or "")
        message, hint, code = _answer(status, server_message(exc), action, is_schema_mismatch(exc))
        return kube_error(
            message, hint, status=status, reason=reason, body=body, transient=is_transient(exc), exit_code=code
        )
    if isinstance(exc, (HTTPError, OSError)):
        return kube_error(
            f"{action}: Kubernetes API unreachable{_where_and_why(exc)}",
            hint="check --kubeconfig/--context and that the API server is up",
            status=0,
            reason="Unreachable",
            transient=is_transient(exc) or isinstance(exc, OSError),
            exit_code=EXIT_ENVIRONMENT,
        )
    if isinstance(exc, (ValueError, TypeError, AttributeError, KeyError)):
        # json.JSONDecodeError, or the client indexing into an answer of the wrong shape: not the Kubernetes API.
        where = f"the server at {server}" if server else "the API server"
        # What it answered (content type, first bytes) says more than the JSON decoder's complaint about it.
        got = answered or f"{type(exc).__name__}: {exc}"
        return EnvironmentProblem(
            f"{action}: {where} did not answer as a Kubernetes API server ({got})",
            hint="check that --kubeconfig/--context point at the API server itself, not a proxy or a login page",
        )
    return EnvironmentProblem(f"{action}: {type(exc).__name__}: {exc}", hint="re-run with --debug for details")
