"""The one way k3deploy reaches a cluster: a `KubeApi` holds the connection, and every call goes through it.

Raw-dict access to any kind through the official DynamicClient, with transient failures retried; and preflight's
reads (`look`, `server_version`, `served_resources`, `can_i`): one `request` each for a path as JSON, built here
(`rest_path`), without API discovery, under the one `look` policy (LOOK_ATTEMPTS, LOOK_TIMEOUT: preflight looks,
it does not wait). Every method takes and returns plain dicts (the objects as the API server sends them), so the
pure rollout and preflight modules never see a client type or a REST path. Non-transient errors are translated
once, here, naming the server this connection dialled and quoting what it last answered (its state, not a
module's).
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

from k3deploy.errors import EXIT_ENVIRONMENT, CheckFailed, K3DeployError, kube_error
from k3deploy.kobject import KubeObject
from k3deploy.kube.client import connect, translate
from k3deploy.kube.options import KubeOptions
from k3deploy.kube.retry import MAX_ATTEMPTS, call_with_retries

#: The field manager of every server-side apply k3deploy makes.
FIELD_MANAGER = "k3deploy"
#: Preflight looks, it does not wait: one retry on a transient failure, then the error (a dead API server fails
#: it fast) ...
LOOK_ATTEMPTS = 2
#: ... and each request within (connect, read) seconds: a black-holed address must not hang preflight.
LOOK_TIMEOUT = (5.0, 30.0)


def rest_path(api_version: str, plural: str = "", name: str | None = None, namespace: str | None = None) -> str:
    """`/api/v1/...` (the core group) or `/apis/GROUP/VERSION/...`: a collection, or one object when `name` is
    given, in `namespace` when one is given."""
    parts = ["/api/v1" if api_version == "v1" else f"/apis/{api_version}"]
    parts += ["namespaces", namespace] if namespace else []
    parts += [plural] if plural else []
    parts += [name] if name else []
    return "/".join(parts)


def object_key(obj: KubeObject) -> str:
    """`Kind/name` (with `namespace/` in front for namespaced objects): how objects are named in messages."""
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace")
    name = f"{obj.get('kind')}/{meta.get('name')}"
    return f"{namespace}/{name}" if namespace else name


def _as_dict(result: Any) -> KubeObject:
    """The client's answer (a ResourceInstance) as the plain dict every method returns."""
    found: KubeObject = result.to_dict()
    return found


class KubeApi:
    """One cluster connection: discovery, get/list/apply/delete/watch, logs and events as raw dicts."""

    def __init__(self, options: KubeOptions) -> None:
        self.options = options
        self.client = connect(options)
        #: The API server's URL as the kubeconfig names it: errors of this connection say where it dialled.
        self.server: str = str(self.client.configuration.host)
        self._resources: dict[tuple[str, str], Any] = {}

    @functools.cached_property
    def dynamic(self) -> Any:
        """The DynamicClient, made (API discovery) on first use: `request` alone never pays for discovery."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes.dynamic import DynamicClient

        # A discovery cache of this connection's own: the library's default is shared in /tmp by host and goes
        # stale when CRDs are installed between runs. It goes with the connection (or at the latest at exit), so a
        # process that makes many connections leaves no folder per connection behind.
        cache_dir = tempfile.mkdtemp(prefix="k3deploy-discovery-")
        weakref.finalize(self, shutil.rmtree, cache_dir, True)
        try:
            return call_with_retries(DynamicClient, self.client, cache_file=os.path.join(cache_dir, "discovery.json"))
        except Exception as exc:
            raise self._translate(exc, "discover the API") from None

    def close(self) -> None:
        """Close the connection's pool."""
        self.client.close()

    def _translate(self, exc: BaseException, action: str) -> K3DeployError:
        return translate(exc, action, server=self.server, answered=self.client.describe_last_answer())

    def request(
        self,
        method: str,
        path: str,
        action: str,
        *,
        query: builtins.list[tuple[str, str]] | None = None,
        body: KubeObject | builtins.list[KubeObject] | None = None,
        missing_ok: bool = False,
        look: bool = False,
        content_type: str = "application/json",
    ) -> Any:
        """One request to `path` for raw JSON (no model objects, no discovery); None for a 404 when `missing_ok`;
        a KubeError (its `status` set) otherwise. `look`: under the look policy (LOOK_ATTEMPTS, LOOK_TIMEOUT), else
        retried as every call is, each attempt bounded by the command's deadline alone."""
        attempts, timeout = (LOOK_ATTEMPTS, LOOK_TIMEOUT) if look else (MAX_ATTEMPTS, None)
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes.client.exceptions import ApiException

        def call() -> Any:
            request = self.client.param_serialize(
                method,
                path,
                query_params=query or [],
                body=body,
                auth_settings=["BearerToken"],
                header_params={
                    "Accept": "application/json",
                    **({"Content-Type": content_type} if body is not None else {}),
                },
            )
            response = self.client.call_api(*request, _request_timeout=timeout)
            response.read()
            if not 200 <= response.status <= 299:
                self.client.response_deserialize(response, {})  # raises the ApiException for this status
            return json.loads(response.data or b"null")

        try:
            return call_with_retries(call, attempts=attempts)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            raise self._translate(exc, action) from None
        except Exception as exc:
            raise self._translate(exc, action) from None

    def look(
        self,
        action: str,
        api_version: str,
        plural: str,
        name: str | None = None,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """A collection (or one object, by `name`) as raw JSON, as preflight reads: under the look policy, without
        discovery; None for a 404 when `missing_ok`."""
        query = [("fieldSelector", field_selector)] if field_selector else None
        path = rest_path(api_version, plural, name, namespace)
        return self.request("GET", path, action, query=query, missing_ok=missing_ok, look=True)

    def server_version(self) -> str:
        """The API server's gitVersion (`v1.34.1`), under the look policy."""
        return str(self.request("GET", "/version", "read the server version", look=True)["gitVersion"])

    def served_resources(self, groups: builtins.list[str]) -> builtins.list[str]:
        """`plural.group` of every resource the server serves in `groups` (any served version), from the discovery
        documents of those groups alone (not the DynamicClient's discovery of every group), under the look policy."""
        listed = self.request("GET", "/apis", "discover API groups", look=True)
        out: set[str] = set()
        for group in listed.get("groups") or []:
            if group.get("name") not in groups:
                continue
            for version in group.get("versions") or []:
                gv = version["groupVersion"]
                found = self.request("GET", rest_path(gv), f"discover {gv}", missing_ok=True, look=True) or {}
                out.update(f"{r['name']}.{group['name']}" for r in found.get("resources") or [] if "/" not in r["name"])
        return sorted(out)

    def namespaced_kinds(self) -> builtins.list[tuple[str, str, str]]:
        """(apiVersion, kind, plural) of every resource the server serves inside a namespace that can be listed and
        deleted (what the namespace controller deletes with a namespace), each group at its preferred version, from
        the discovery documents, under the look policy."""
        listed = self.request("GET", "/apis", "discover API groups", look=True)
        versions = ["v1"] + [
            str(group["preferredVersion"]["groupVersion"])
            for group in listed.get("groups") or []
            if (group.get("preferredVersion") or {}).get("groupVersion")
        ]
        out: builtins.list[tuple[str, str, str]] = []
        for gv in versions:
            found = self.request("GET", rest_path(gv), f"discover {gv}", missing_ok=True, look=True) or {}
            for res in found.get("resources") or []:
                verbs = set(res.get("verbs") or [])
                if res.get("namespaced") and "/" not in res["name"] and {"list", "delete"} <= verbs:
                    out.append((gv, str(res["kind"]), str(res["name"])))
        return out

    def can_i(
        self, verb: str, resource: str, group: str = "", namespace: str | None = None, subresource: str = ""
    ) -> tuple[bool, str]:
        """(allowed, reason) from a SelfSubjectAccessReview, as `kubectl auth can-i` asks it, under the look policy."""
        attributes: KubeObject = {"verb": verb, "resource": resource, "group": group}
        if namespace:
            attributes["namespace"] = namespace
        if subresource:
            attributes["subresource"] = subresource
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        path = rest_path("authorization.k8s.io/v1", "selfsubjectaccessreviews")
        review = self.request("POST", path, f"review access to {verb} {resource}", body=body, look=True)
        status = review.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or "")

    def resource(self, api_version: str, kind: str) -> Any:
        """The dynamic resource of a kind; CheckFailed naming the kind when the cluster does not serve it."""
        key = (api_version, kind)
        if key not in self._resources:
            # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
            from kubernetes.dynamic.exceptions import ResourceNotFoundError

            try:
                self._resources[key] = call_with_retries(self.dynamic.resources.get, api_version=api_version, kind=kind)
            except ResourceNotFoundError:
                raise CheckFailed(
                    f"the cluster does not serve {kind} ({api_version})",
                    hint="install its CustomResourceDefinition (operator) first; `k3deploy preflight` lists what is missing",
                ) from None
            except Exception as exc:
                raise self._translate(exc, f"discover {kind}") from None
        return self._resources[key]

    def served(self, api_version: str, kind: str) -> bool:
        """True when the cluster serves this kind (its CRD is installed)."""
        try:
            self.resource(api_version, kind)
        except CheckFailed:
            return False
        return True

    def _call(self, action: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call_with_retries(func, *args, **kwargs)
        except K3DeployError:
            raise
        except Exception as exc:
            raise self._translate(exc, action) from exc

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """The live object, or None when it (or its kind) does not exist."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes.dynamic.exceptions import NotFoundError

        if not self.served(api_version, kind):
            return None
        res = self.resource(api_version, kind)
        try:
            found = call_with_retries(res.get, name=name, namespace=namespace if res.namespaced else None)
        except NotFoundError:
            return None
        except Exception as exc:
            raise self._translate(exc, f"get {kind}/{name}") from exc
        return _as_dict(found)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[KubeObject], str]:
        """Objects of a kind and the list's resourceVersion (to start a watch from)."""
        res = self.resource(api_version, kind)
        result = self._call(
            f"list {kind}",
            res.get,
            namespace=namespace if res.namespaced else None,
            label_selector=label_selector,
            field_selector=field_selector,
        ).to_dict()
        return list(result.get("items") or []), str(result.get("metadata", {}).get("resourceVersion", ""))

    def apply(
        self, obj: KubeObject, *, force: bool = False, dry_run: bool = False, manager: str = FIELD_MANAGER
    ) -> KubeObject:
        """Server-side apply with field manager `manager` (`k3deploy`); a KubeError (status, reason, Status body)
        on refusal."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata", {})
        done = self._call(
            f"apply {object_key(obj)}",
            self.dynamic.server_side_apply,
            res,
            body=obj,
            name=meta.get("name"),
            namespace=meta.get("namespace") if res.namespaced else None,
            field_manager=manager,
            force_conflicts=force,
            dry_run="All" if dry_run else None,
        )
        return _as_dict(done)

    def create(self, obj: KubeObject) -> KubeObject:
        """Create an object; a KubeError with status 409 when it exists already."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata", {})
        done = self._call(
            f"create {object_key(obj)}",
            res.create,
            body=obj,
            namespace=meta.get("namespace") if res.namespaced else None,
        )
        return _as_dict(done)

    def replace(self, obj: KubeObject) -> KubeObject:
        """Replace an object, its metadata.resourceVersion a precondition: status 409 when it changed meanwhile."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata", {})
        done = self._call(
            f"replace {object_key(obj)}",
            res.replace,
            body=obj,
            name=meta.get("name"),
            namespace=meta.get("namespace") if res.namespaced else None,
        )
        return _as_dict(done)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, *, propagation: str = "Background"
    ) -> bool:
        """Delete one object (dependents by `propagation`); False when it (or its kind) was already gone."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes.dynamic.exceptions import NotFoundError

        if not self.served(api_version, kind):
            return False
        res = self.resource(api_version, kind)
        try:
            call_with_retries(
                res.delete,
                name=name,
                namespace=namespace if res.namespaced else None,
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation},
            )
        except NotFoundError:
            return False
        except Exception as exc:
            raise self._translate(exc, f"delete {kind}/{name}") from exc
        return True

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        resource_version: str,
        *,
        timeout_s: int,
        field_selector: str | None = None,
        label_selector: str | None = None,
        watcher: Any = None,
    ) -> Iterator[KubeObject]:
        """One watch connection: raw events {type, object} from `resource_version` until the server ends it.

        Errors are KubeErrors (410 Gone, a dropped connection: `transient`): the caller re-lists or resumes.
        `watcher` (from `new_watcher`) lets another thread end the connection with `watcher.stop()`.
        """
        res = self.resource(api_version, kind)
        watcher = watcher or self.new_watcher()
        try:
            yield from self._events(
                watcher, res, namespace, resource_version, timeout_s, field_selector, label_selector
            )
        except K3DeployError:
            raise
        except ValueError as exc:
            # An event line that does not decode: the connection broke mid-event; resuming from the last version heals it.
            raise kube_error(
                f"watch {kind}: broken event stream: {exc}",
                None,
                status=0,
                reason="BrokenStream",
                transient=True,
                exit_code=EXIT_ENVIRONMENT,
            ) from exc
        except Exception as exc:
            raise self._translate(exc, f"watch {kind}") from exc

    @staticmethod
    def _events(
        watcher: Any,
        res: Any,
        namespace: str | None,
        resource_version: str,
        timeout_s: int,
        field_selector: str | None,
        label_selector: str | None,
    ) -> Iterator[KubeObject]:
        stream = watcher.stream(
            res.get,
            namespace=namespace if res.namespaced else None,
            field_selector=field_selector,
            label_selector=label_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_s,
            allow_watch_bookmarks=True,
            serialize=False,
            # A read timeout past the server's own end of the watch catches a connection that died silently.
            _request_timeout=(10, timeout_s + 15),
        )
        try:
            for event in stream:
                yield {"type": event["type"], "object": event["raw_object"]}
        finally:
            watcher.stop()
            stream.close()

    @staticmethod
    def new_watcher() -> Any:
        """A `kubernetes.watch.Watch`: pass it to `watch` to be able to stop that watch from another thread."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes import watch

        return watch.Watch()

    def pod_log(self, name: str, namespace: str, container: str | None, *, tail_lines: int, previous: bool) -> str:
        """The last `tail_lines` lines of a container's log ('' when the server has none)."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes import client

        core = client.CoreV1Api(self.client)
        try:
            text = call_with_retries(
                core.read_namespaced_pod_log,
                name,
                namespace,
                container=container,
                tail_lines=tail_lines,
                previous=previous,
            )
        except Exception:
            # Logs are evidence for a diagnosis, never a reason to fail it.
            return ""
        return text if isinstance(text, str) else str(text or "")

    def read_log(self, name: str, namespace: str, container: str, *, limit_bytes: int) -> str:
        """A container's whole current log, up to `limit_bytes`; a KubeError when it cannot be read."""
        # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
        from kubernetes import client

        core = client.CoreV1Api(self.client)
        text = self._call(
            f"read the log of pod {name}",
            core.read_namespaced_pod_log,
            name,
            namespace,
            container=container,
            limit_bytes=limit_bytes,
        )
        return text if isinstance(text, str) else str(text or "")

    def events(self, namespace: str) -> builtins.list[KubeObject]:  # `list` here is the method above
        """Core events of a namespace (empty when they cannot be read)."""
        try:
            items, _ = self.list("v1", "Event", namespace)
        except K3DeployError:
            return []
        return items
