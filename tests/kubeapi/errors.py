"""API errors as the Kubernetes API server reports them: a metav1 Status with code, reason, message and details."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.kubeapi.registry import ResourceType

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(code: int, message: str, reason: str | None = None, details: dict | None = None) -> dict:
    """A metav1 Status object for a failed request."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, ""),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class ApiError(Exception):
    """A request failure the server answers with a Status (and optionally a Retry-After header)."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "")
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict:
        """The Status body."""
        return status_body(self.code, self.message, self.reason, self.details)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        """400 BadRequest."""
        return cls(400, message)

    @classmethod
    def not_found(cls, rtype: ResourceType, name: str) -> ApiError:
        """404 for a named object, worded as the server words it."""
        return cls(
            404,
            f'{rtype.group_resource} "{name}" not found',
            details={"name": name, "group": rtype.group, "kind": rtype.plural},
        )

    @classmethod
    def already_exists(cls, rtype: ResourceType, name: str) -> ApiError:
        """409 AlreadyExists on create."""
        return cls(
            409,
            f'{rtype.group_resource} "{name}" already exists',
            "AlreadyExists",
            {"name": name, "group": rtype.group, "kind": rtype.plural},
        )

    @classmethod
    def stale(cls, rtype: ResourceType, name: str) -> ApiError:
        """409 Conflict for a write carrying an outdated metadata.resourceVersion."""
        return cls(
            409,
            f'Operation cannot be fulfilled on {rtype.group_resource} "{name}": the object has been '
            "modified; please apply your changes to the latest version and try again",
            "Conflict",
            {"name": name, "group": rtype.group, "kind": rtype.plural},
        )

    @classmethod
    def invalid(cls, rtype: ResourceType, name: str, field: str, message: str) -> ApiError:
        """422 Invalid for one field."""
        qualified = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
        return cls(
            422,
            f'{qualified} "{name}" is invalid: {field}: {message}',
            "Invalid",
            {
                "name": name,
                "group": rtype.group,
                "kind": rtype.kind,
                "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
            },
        )


#: field.ErrorType -> (its String(), the StatusCause type), from k8s.io/apimachinery/pkg/util/validation/field/errors.go.
FIELD_ERROR_TYPES = {
    "NotFound": ("Not found", "FieldValueNotFound"),
    "Required": ("Required value", "FieldValueRequired"),
    "Duplicate": ("Duplicate value", "FieldValueDuplicate"),
    "Invalid": ("Invalid value", "FieldValueInvalid"),
    "NotSupported": ("Unsupported value", "FieldValueNotSupported"),
    "Forbidden": ("Forbidden", "FieldValueForbidden"),
    "TooLong": ("Too long", "FieldValueTooLong"),
    "TooMany": ("Too many", "FieldValueTooMany"),
    "TypeInvalid": ("Invalid value", "FieldValueTypeInvalid"),
}
_OMIT = object()


class GoValue(str):
    """A bad value printed as is (Go's %#v of a map or struct), not quoted."""


def go_value(value: object) -> str:
    """A bad value as field.Error.ErrorBody prints it: strings quoted, numbers and booleans plain, null as null."""
    if isinstance(value, GoValue):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class FieldError:
    """One field.Error: its type (a key of FIELD_ERROR_TYPES), field path, bad value and detail."""

    type: str
    field: str
    value: object = _OMIT
    detail: str = ""

    def body(self) -> str:
        """field.Error.ErrorBody(): Required, Forbidden, TooLong and value-less errors print no value."""
        name = FIELD_ERROR_TYPES[self.type][0]
        if self.type in ("Required", "Forbidden", "TooLong", "Internal") or self.value is _OMIT:
            out = name
        else:
            out = f"{name}: {go_value(self.value)}"
        return f"{out}: {self.detail}" if self.detail else out

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def aggregate(errors: list[FieldError] | list[str]) -> str:
    """utilerrors.Aggregate's message: one error as itself, several as `[a, b]`."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def invalid(rtype: ResourceType, name: str, errors: list[FieldError]) -> ApiError:
    """errors.NewInvalid (k8s.io/apimachinery/pkg/api/errors/errors.go): 422, reason Invalid, one cause per
    field error, message `<Kind>.<group> "<name>" is invalid: <aggregate>`.
    """
    qualified = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
    causes = [{"reason": FIELD_ERROR_TYPES[e.type][1], "message": e.body(), "field": e.field} for e in errors]
    return ApiError(
        422,
        f'{qualified} "{name}" is invalid: {aggregate(errors)}',
        "Invalid",
        {"name": name, "group": rtype.group, "kind": rtype.kind, "causes": causes},
    )
