"""What a write goes through between decoding and storage: pruning or rejecting unknown fields, mutating webhooks,
structural defaulting, schema and CEL validation, validating webhooks.

Order and answers as kube-apiserver gives them (k8s.io/apiserver/pkg/endpoints/handlers/{create,update,patch}.go,
k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go):
- server-side apply first converts the apply configuration to a typed value; an undeclared field or a wrong
  scalar type fails there, whatever fieldValidation says, with a plain error the server answers as 500
  (`failed to create typed patch object (ns/name; group/version, Kind=Kind): .spec.foo: field not declared in
  schema`; structured-merge-diff typed/validate.go, apimachinery managedfields/internal/structuredmerge.go;
  kubernetes/kubernetes#139253 tracks it still being a 500);
- any other write has its unknown fields pruned: fieldValidation=Strict (kubectl's default) answers 400
  `strict decoding error: unknown field "spec.foo"`, Warn (the default, and what the official Python client gets
  since it sends no fieldValidation) drops them with a `Warning: 299` header, Ignore drops them silently;
- mutating webhooks, then defaults from the schema, then validation (422 Invalid, errors.NewInvalid) including
  `x-kubernetes-validations`, then validating webhooks (403).
Built-in kinds are held to the Kubernetes 1.34 schemas shipped with kubernetes-validate (see builtin.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.kubeapi import builtin, cel, structural, webhooks
from tests.kubeapi.errors import ApiError, invalid
from tests.kubeapi.registry import ResourceType

LWS = ("leaderworkerset.x-k8s.io", "leaderworkersets")
DIRECTIVES = ("Strict", "Warn", "Ignore")


@dataclass
class Admission:
    """One request's admission: its type, version, subresource and fieldValidation directive; collects warnings."""

    rtype: ResourceType
    version: str
    subresource: str | None = None
    directive: str = "Warn"
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.directive not in DIRECTIVES:
            raise ApiError.bad_request(
                f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got "{self.directive}"'
            )

    def check_apply_config(self, config: dict, namespace: str | None) -> None:
        """The typed conversion of an apply configuration (before any merge)."""
        schema = self.rtype.schema(self.version)
        errors = (
            structural.typed_errors(schema, config)
            if schema is not None
            else builtin.typed_errors(self.rtype, self.version, config)
        )
        if errors:
            meta = config.get("metadata") or {}
            gvk = f"{self.rtype.api_version(self.version)}, Kind={self.rtype.kind}"
            raise ApiError(
                500,
                f"failed to create typed patch object ({namespace or ''}/{meta.get('name', '')}; "
                f"{gvk}): {structural.smd_message(errors)}",
                reason="",
            )

    def __call__(self, new: dict, old: dict | None, *, applied: bool = False) -> None:
        """Admit `new` (replacing `old`, None on create) in place, or raise the server's answer."""
        schema = self.rtype.schema(self.version)
        if schema is None:
            builtin.admit(self, new, old, applied=applied)
            return
        if not applied:
            self.unknown_fields(structural.prune(schema, new))
        if self.rtype.key == LWS and self.subresource is None:
            webhooks.default(new)
        structural.apply_defaults(schema, new)
        errors = structural.validate(schema, new)
        if not errors:
            errors = cel.validate(schema, new, old)
        if errors:
            raise invalid(self.rtype, new.get("metadata", {}).get("name", ""), errors)
        if self.rtype.key == LWS and self.subresource is None:
            webhooks.admit(new)

    def unknown_fields(self, dropped: list[str]) -> None:
        """Refuse (Strict), report (Warn) or forget (Ignore) the fields pruning dropped."""
        if not dropped or self.directive == "Ignore":
            return
        found = [f'unknown field "{path}"' for path in dropped]
        if self.directive == "Strict":
            kind = self.rtype.kind
            raise ApiError.bad_request(
                f'{kind} in version "{self.version}" cannot be handled as a {kind}: '
                f"strict decoding error: {', '.join(found)}"
            )
        self.warnings += found
