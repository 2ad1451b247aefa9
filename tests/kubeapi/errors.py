"""API errors as the Kubernetes API server reports them: a metav1 Status with code, reason, message and details."""

from __future__ import annotations

from tests.kubeapi.registry import ResourceType

REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


def status_body(code: int, message: str, reason: str | None = None, details: dict | None = None) -> dict:
    """A metav1 Status object for a failed request."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason or REASONS.get(code, ""), "code": code}
    if details:
        body["details"] = details
    return body


class ApiError(Exception):
    """A request failure the server answers with a Status (and optionally a Retry-After header)."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: dict | None = None,
                 retry_after: float | None = None) -> None:
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
        return cls(404, f'{rtype.group_resource} "{name}" not found',
                   details={"name": name, "group": rtype.group, "kind": rtype.plural})

    @classmethod
    def already_exists(cls, rtype: ResourceType, name: str) -> ApiError:
        """409 AlreadyExists on create."""
        return cls(409, f'{rtype.group_resource} "{name}" already exists', "AlreadyExists",
                   {"name": name, "group": rtype.group, "kind": rtype.plural})

    @classmethod
    def stale(cls, rtype: ResourceType, name: str) -> ApiError:
        """409 Conflict for a write carrying an outdated metadata.resourceVersion."""
        return cls(409, f'Operation cannot be fulfilled on {rtype.group_resource} "{name}": the object has been '
                        "modified; please apply your changes to the latest version and try again", "Conflict",
                   {"name": name, "group": rtype.group, "kind": rtype.plural})

    @classmethod
    def invalid(cls, rtype: ResourceType, name: str, field: str, message: str) -> ApiError:
        """422 Invalid for one field."""
        qualified = f"{rtype.kind}.{rtype.group}" if rtype.group else rtype.kind
        return cls(422, f'{qualified} "{name}" is invalid: {field}: {message}', "Invalid",
                   {"name": name, "group": rtype.group, "kind": rtype.kind,
                    "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]})
