"""REST operations on resources: list / get / create / replace / patch / apply / delete, subresources and logs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from tests.kubeapi import protobuf
from tests.kubeapi.admission import Admission
from tests.kubeapi.errors import ApiError
from tests.kubeapi.patch import json_patch, merge_patch
from tests.kubeapi.registry import ResourceType
from tests.kubeapi.selectors import field_selector, label_selector
from tests.kubeapi.store import Store
from tests.kubeapi.table import as_table


@dataclass
class Call:
    """One resource request, already routed: the type, version, scope, name, subresource and query."""

    method: str
    rtype: ResourceType
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None
    query: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: Warnings for the answer's `Warning: 299` headers (unknown fields dropped under fieldValidation=Warn).
    warnings: list[str] = field(default_factory=list)
    _admission: Admission | None = field(default=None, repr=False)

    @property
    def admission(self) -> Admission:
        """This write's admission (pruning, defaulting, validation, webhooks), by fieldValidation."""
        if self._admission is None:
            self._admission = Admission(
                self.rtype, self.version, self.subresource, self.query.get("fieldValidation") or "Warn", self.warnings
            )
        return self._admission

    @property
    def api_version(self) -> str:
        """The apiVersion of objects in this request's group/version."""
        return self.rtype.api_version(self.version)

    @property
    def dry_run(self) -> bool:
        """dryRun=All."""
        return self.query.get("dryRun") == "All"

    @property
    def manager(self) -> str:
        """fieldManager, else the user agent's product token (as the server derives it)."""
        agent = self.headers.get("user-agent", "unknown").split("/")[0].split(" ")[0]
        return self.query.get("fieldManager") or agent or "unknown"

    def json_body(self) -> object:
        """The body parsed as JSON, or YAML (apply configurations may be either), or the protobuf kubectl sends."""
        if not self.body:
            return None
        if self.headers.get("content-type", "").startswith(protobuf.PROTOBUF):
            return protobuf.decode(self.body)
        try:
            return json.loads(self.body)
        except ValueError:
            try:
                return yaml.safe_load(self.body)
            except yaml.YAMLError as exc:
                raise ApiError.bad_request(f"the body could not be decoded: {exc}") from None

    @property
    def verb(self) -> str:
        """The authorization verb."""
        if self.method == "GET":
            if self.name:
                return "get"
            return "watch" if self.query.get("watch") in ("true", "1") else "list"
        return {
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if self.name else "deletecollection",
        }[self.method]


def _versioned(obj: dict, api_version: str) -> dict:
    obj["apiVersion"] = api_version
    return obj


def list_objects(store: Store, call: Call) -> dict:
    """A list (or a Table when asked for one) with the list resourceVersion."""
    with store.lock:
        items = store.list(call.rtype, call.namespace, call.query.get("labelSelector"), call.query.get("fieldSelector"))
        rv = str(store.rv)
    items = [_versioned(o, call.api_version) for o in items]
    if "as=Table" in call.headers.get("accept", ""):
        return as_table(call.rtype, items, rv)
    return {
        "kind": f"{call.rtype.kind}List",
        "apiVersion": call.api_version,
        "metadata": {"resourceVersion": rv},
        "items": items,
    }


def _check_name(call: Call, obj: dict) -> None:
    sent = (obj.get("metadata") or {}).get("name")
    if call.name and sent and sent != call.name:
        raise ApiError.bad_request(f"the name of the object ({sent}) does not match the name on the URL ({call.name})")
    sent_ns = (obj.get("metadata") or {}).get("namespace")
    if call.rtype.namespaced and call.namespace and sent_ns and sent_ns != call.namespace:
        raise ApiError.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def get_object(store: Store, call: Call) -> dict:
    """GET an object (or its status subresource, which reads the same)."""
    obj = store.get(call.rtype, call.name or "", call.namespace)
    if obj is None:
        raise ApiError.not_found(call.rtype, call.name or "")
    return _versioned(obj, call.api_version)


def create(store: Store, call: Call) -> tuple[int, dict]:
    """POST to a collection."""
    obj = call.json_body()
    if not isinstance(obj, dict):
        raise ApiError.bad_request("the body of the request was not an object")
    _check_name(call, obj)
    created = store.create(
        call.rtype,
        obj,
        call.namespace,
        manager=call.manager,
        dry_run=call.dry_run,
        version=call.version,
        admit=call.admission,
    )
    return 201, created


def replace(store: Store, call: Call) -> dict:
    """PUT an object or its status."""
    obj = call.json_body()
    if not isinstance(obj, dict):
        raise ApiError.bad_request("the body of the request was not an object")
    _check_name(call, obj)
    obj.setdefault("metadata", {})["name"] = call.name
    return _versioned(
        store.replace(
            call.rtype,
            obj,
            call.namespace,
            subresource=call.subresource,
            manager=call.manager,
            dry_run=call.dry_run,
            admit=call.admission,
        ),
        call.api_version,
    )


def patch(store: Store, call: Call) -> tuple[int, dict]:
    """PATCH: server-side apply, JSON merge / strategic merge patch or JSON patch, by Content-Type."""
    content_type = call.headers.get("content-type", "").split(";")[0].strip()
    body = call.json_body()
    if content_type == "application/apply-patch+yaml":
        if not isinstance(body, dict):
            raise ApiError.bad_request("the apply configuration was not an object")
        if not call.query.get("fieldManager"):
            raise ApiError.bad_request("PATCH, application/apply-patch+yaml requires a non-empty fieldManager")
        _check_name(call, body)
        body.setdefault("metadata", {})["name"] = call.name
        existed = store.get(call.rtype, call.name or "", call.namespace) is not None
        call.admission.check_apply_config(body, call.namespace)
        out = store.apply(
            call.rtype,
            body,
            call.namespace,
            manager=call.manager,
            force=call.query.get("force") == "true",
            subresource=call.subresource,
            dry_run=call.dry_run,
            admit=call.admission,
        )
        return (200 if existed else 201), _versioned(out, call.api_version)
    if content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        if not isinstance(body, dict):
            raise ApiError.bad_request("the merge patch was not an object")

        def mutate(obj: dict) -> None:
            merged = merge_patch(obj, body)
            obj.clear()
            obj.update(merged)
    elif content_type == "application/json-patch+json":
        if not isinstance(body, list):
            raise ApiError.bad_request("the JSON patch was not a list of operations")

        def mutate(obj: dict) -> None:
            patched = json_patch(obj, body)
            obj.clear()
            obj.update(patched)
    else:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json-patch+json, application/merge-patch+json, "
            f"application/apply-patch+yaml (got {content_type!r})",
        )
    out = store.update(
        call.rtype,
        call.name or "",
        call.namespace,
        mutate,
        subresource=call.subresource,
        manager=call.manager,
        dry_run=call.dry_run,
        admit=call.admission,
    )
    return 200, _versioned(out, call.api_version)


def delete(store: Store, call: Call) -> dict:
    """DELETE an object; pods, namespaces, custom resources and objects whose deletion waits answer with the object,
    the rest with a Status."""
    options = call.json_body() or {}
    propagation = call.query.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
    dry_run = call.dry_run or "All" in (options.get("dryRun") or [])
    grace_raw = call.query.get("gracePeriodSeconds", options.get("gracePeriodSeconds"))
    grace = float(grace_raw) if grace_raw is not None else None
    gone = store.delete(
        call.rtype, call.name or "", call.namespace, dry_run=dry_run, propagation=propagation, grace=grace
    )
    pending = (
        bool(gone["metadata"].get("deletionTimestamp"))
        and not dry_run
        and store.get(call.rtype, call.name or "", call.namespace) is not None
    )
    # apiserver registry/generic/registry/store.go Delete: an object whose deletion waits (finalizers, grace period)
    # is returned as it now is.
    if call.rtype.plural in ("pods", "namespaces") or call.rtype.crd or pending:
        return _versioned(gone, call.api_version)
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": call.name,
            "group": call.rtype.group,
            "kind": call.rtype.plural,
            "uid": gone["metadata"]["uid"],
        },
    }


def delete_collection(store: Store, call: Call) -> dict:
    """DELETE a collection (with selectors)."""
    by_label = label_selector(call.query.get("labelSelector"))
    by_field = field_selector(call.query.get("fieldSelector"))
    gone = []
    for obj in store.list(call.rtype, call.namespace):
        if by_label(obj) and by_field(obj):
            gone.append(
                store.delete(
                    call.rtype, obj["metadata"]["name"], obj["metadata"].get("namespace"), dry_run=call.dry_run
                )
            )
    return {
        "kind": f"{call.rtype.kind}List",
        "apiVersion": call.api_version,
        "metadata": {"resourceVersion": str(store.rv)},
        "items": gone,
    }


def pod_log(store: Store, call: Call) -> str:
    """/pods/<name>/log: the container's log lines (tailLines, container, previous)."""
    pod = get_object(store, call)
    containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
    container = call.query.get("container")
    if not container:
        if len(containers) != 1:
            raise ApiError.bad_request(
                f"a container name must be specified for pod {call.name}, choose one of: [{' '.join(containers)}]"
            )
        container = containers[0]
    if container not in containers:
        raise ApiError.bad_request(f"container {container} is not valid for pod {call.name}")
    key = (call.namespace or "", call.name or "", container)
    source = store.previous_logs if call.query.get("previous") == "true" else store.logs
    if key not in source:
        if call.query.get("previous") == "true":
            raise ApiError.bad_request(f'previous terminated container "{container}" in pod "{call.name}" not found')
        waiting = next(
            (
                s.get("state", {}).get("waiting")
                for s in pod.get("status", {}).get("containerStatuses", [])
                if s.get("name") == container
            ),
            None,
        )
        reason = (waiting or {}).get("reason", "ContainerCreating")
        raise ApiError.bad_request(f'container "{container}" in pod "{call.name}" is waiting to start: {reason}')
    lines = list(source[key])
    tail = call.query.get("tailLines")
    if tail is not None:
        lines = lines[-int(tail) :] if int(tail) > 0 else []
    return "".join(line + "\n" for line in lines)


def bind(store: Store, call: Call) -> tuple[int, dict]:
    """POST pods/<name>/binding: assign the pod to a node."""
    binding = call.json_body() or {}
    node = (binding.get("target") or {}).get("name")

    def assign(pod: dict) -> None:
        if pod["spec"].get("nodeName"):
            raise ApiError(409, f'pod {call.name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        pod["spec"]["nodeName"] = node

    store.update(call.rtype, call.name or "", call.namespace, assign, manager=call.manager)
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
