"""Authorization for the test API server: a deny-list answered by SelfSubjectAccessReview and enforced (403)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

#: The user the test API server pretends the client authenticated as.
USER = "test-user"


@dataclass(frozen=True)
class Rule:
    """A denied action; None fields match anything."""

    verb: str | None = None
    resource: str | None = None
    group: str | None = None
    namespace: str | None = None
    subresource: str | None = None

    def matches(self, verb: str, group: str, resource: str, namespace: str, subresource: str) -> bool:
        """Whether this rule denies the attributes."""
        return all(
            want is None or want == have
            for want, have in (
                (self.verb, verb),
                (self.resource, resource),
                (self.group, group),
                (self.namespace, namespace),
                (self.subresource, subresource),
            )
        )


class Access:
    """Everything is allowed except what `deny` lists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: list[Rule] = []

    def deny(
        self,
        verb: str | None = None,
        resource: str | None = None,
        group: str | None = None,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> None:
        """Deny a verb on a resource (e.g. deny("create", "leaderworkersets", "leaderworkerset.x-k8s.io"))."""
        with self._lock:
            self.rules.append(Rule(verb, resource, group, namespace, subresource))

    def clear(self) -> None:
        """Allow everything again."""
        with self._lock:
            self.rules.clear()

    def allowed(self, verb: str, group: str, resource: str, namespace: str = "", subresource: str = "") -> bool:
        """Whether the test user may do this."""
        with self._lock:
            return not any(r.matches(verb, group, resource, namespace, subresource) for r in self.rules)

    def forbidden_message(self, verb: str, group: str, resource: str, namespace: str, subresource: str) -> str:
        """The 403 message an RBAC-denied request gets."""
        what = f"{resource}/{subresource}" if subresource else resource
        qualified = f"{what}.{group}" if group else what
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        return f'{qualified} is forbidden: User "{USER}" cannot {verb} resource "{what}" in API group "{group}"{where}'

    def review(self, body: dict) -> dict:
        """Answer a SelfSubjectAccessReview."""
        attrs = (body.get("spec") or {}).get("resourceAttributes") or {}
        ok = self.allowed(
            attrs.get("verb", ""),
            attrs.get("group", ""),
            attrs.get("resource", ""),
            attrs.get("namespace", ""),
            attrs.get("subresource", ""),
        )
        status = {"allowed": ok}
        if ok:
            status["reason"] = (
                f'RBAC: allowed by ClusterRoleBinding "test-admin" of ClusterRole "cluster-admin" to User "{USER}"'
            )
        else:
            status["denied"] = False
            status["reason"] = ""
        out = dict(body)
        out.setdefault("apiVersion", "authorization.k8s.io/v1")
        out.setdefault("kind", "SelfSubjectAccessReview")
        out["metadata"] = {"creationTimestamp": None}
        out["status"] = status
        return out
