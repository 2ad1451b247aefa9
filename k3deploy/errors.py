"""The one error tree of k3deploy: every exception k3deploy raises is a class here, and the class decides the exit code.

0 all passed · 1 the tool worked and the system failed a check or target (CheckFailed) ·
2 usage or profile error (UsageError, ProfileError) · 3 environment / infrastructure: API unreachable, NVML missing,
a timeout (EnvironmentProblem). The CLI ends with `exit_code` of what it caught. Each leaf below names what raises it.
Pure: no I/O, and nothing heavy to import (the CLI loads this at start-up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from k3deploy.kobject import JsonObject, KubeObject

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3


@dataclass
class CapturedLog:
    """The tail of one container's log, read before its pod could be deleted."""

    pod: str
    container: str | None
    lines: list[str]


@dataclass
class Diagnosis:
    """The failing object, why, the last events of the objects involved and the last log lines."""

    subject: str
    reason: str
    message: str
    events: list[str] = field(default_factory=list)
    log: CapturedLog | None = None

    def lines(self) -> list[str]:
        """The block as plain lines (what the user reads on stderr)."""
        out = [f"failed: {self.subject}", f"  reason: {self.reason}"]
        if self.message:
            out.append(f"  message: {self.message}")
        if self.events:
            out.append("  last events:")
            out.extend(f"    {line}" for line in self.events)
        if self.log is not None and self.log.lines:
            source = f"{self.log.pod}/{self.log.container}" if self.log.container else self.log.pod
            out.append(f"  last log lines of {source}:")
            out.extend(f"    | {line}" for line in self.log.lines)
        return out

    def to_dict(self) -> JsonObject:
        """JSON-able form for `-o json` and the run report."""
        log = None
        if self.log is not None:
            log = {"pod": self.log.pod, "container": self.log.container, "lines": self.log.lines}
        return {
            "subject": self.subject,
            "reason": self.reason,
            "message": self.message,
            "events": self.events,
            "log": log,
        }


class K3DeployError(Exception):
    """Base error: a one-line message, an optional hint, and the exit code it ends the CLI with (its class's).

    `K3DeployError(message, exit_code=N)` (forwarding another error's code) makes the class of that code, so
    `except CheckFailed` catches a forwarded exit 1 too."""

    exit_code: int = EXIT_ENVIRONMENT
    #: What a failed rollout found, shown in the run's summary; None elsewhere.
    diagnosis: Diagnosis | None = None

    def __new__(cls, *args: Any, exit_code: int | None = None, **kwargs: Any) -> K3DeployError:
        if cls is K3DeployError and exit_code is not None:
            cls = error_class(exit_code)
        return super().__new__(cls, *args)

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None and exit_code != self.exit_code:  # a code no class here stands for
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class UsageError(K3DeployError):
    """Bad command-line usage (exit 2)."""

    exit_code = EXIT_USAGE


class ProfileError(K3DeployError):
    """A profile that does not load or does not validate (exit 2)."""

    exit_code = EXIT_USAGE


class EnvironmentProblem(K3DeployError):
    """The tool could not look or act: API unreachable, NVML missing, a timeout (exit 3)."""

    exit_code = EXIT_ENVIRONMENT


class CheckFailed(K3DeployError):
    """The tool worked and the system failed a check or a target (exit 1)."""

    exit_code = EXIT_FAILED


def error_class(exit_code: int) -> type[K3DeployError]:
    """The class that stands for an exit code (K3DeployError itself for a code none stands for)."""
    return {EXIT_FAILED: CheckFailed, EXIT_USAGE: UsageError, EXIT_ENVIRONMENT: EnvironmentProblem}.get(
        exit_code, K3DeployError
    )


# -- the Kubernetes API (kube/) ----------------------------------------------------------------------------------


class KubeError(K3DeployError):
    """An error answer of the Kubernetes API server (or none: `status` 0), with its Status object.

    Modelled on kr8s's `ServerError` (kr8s-org/kr8s, kr8s/_exceptions.py), which keeps the API server's message and
    its `Status` object beside the exception instead of a bare string: rollout/ reads conflicts and immutable fields
    from `body` without touching the client library's exception types. Made by `kube_error`, which picks the
    subclass of the exit code (kube/client.py `translate` chooses it)."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        status: int,
        reason: str = "",
        body: KubeObject | None = None,
        transient: bool = False,
    ) -> None:
        super().__init__(message, hint)
        #: HTTP status of the answer; 0 when the connection failed before one came.
        self.status = status
        #: The Status object's `reason` (e.g. Conflict, Invalid, Expired), else the HTTP reason phrase.
        self.reason = reason
        #: The decoded Status object ({} when the body was not one).
        self.body = body or {}
        #: Trying again (or resuming a watch) may succeed: throttled, a 5xx hiccup, a dropped connection.
        self.transient = transient


class KubeCheckFailed(KubeError, CheckFailed):
    """A KubeError that is also a CheckFailed (exit 1): not found, conflict."""


class KubeUsageError(KubeError, UsageError):
    """A KubeError that is also a UsageError (exit 2): an object the server or a webhook refuses."""


class KubeEnvironmentProblem(KubeError, EnvironmentProblem):
    """A KubeError that is also an EnvironmentProblem (exit 3): unreachable, unauthorized, forbidden, 5xx."""


def kube_error(
    message: str,
    hint: str | None,
    *,
    status: int,
    exit_code: int,
    reason: str = "",
    body: KubeObject | None = None,
    transient: bool = False,
) -> KubeError:
    """A KubeError of the class of `exit_code`, so `except UsageError` still catches a 422."""
    cls = {EXIT_FAILED: KubeCheckFailed, EXIT_USAGE: KubeUsageError}.get(exit_code, KubeEnvironmentProblem)
    return cls(message, hint, status=status, reason=reason, body=body, transient=transient)


class ApiTimeout(EnvironmentProblem):
    """The Kubernetes API did not answer within a request's timeout, or the command's deadline was spent (exit 3)."""


class ExecPluginTimeout(EnvironmentProblem):
    """The kubeconfig's exec credential plugin did not finish within the command's deadline (exit 3)."""


class ForwardFailed(EnvironmentProblem):
    """The port-forward could not be opened: refused by RBAC, no such pod, or the API server unreachable (exit 3).

    `status` is the API server's HTTP answer to the upgrade (0 when none came)."""

    def __init__(self, message: str, hint: str | None = None, *, status: int = 0) -> None:
        super().__init__(message, hint)
        self.status = status


# -- the rollout (rollout/) --------------------------------------------------------------------------------------


class RolloutFailed(CheckFailed):
    """The rollout failed for good (a pod cannot run, a Job failed); carries the diagnosis (exit 1)."""

    def __init__(self, message: str, diagnosis: Diagnosis, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.diagnosis = diagnosis


class RolloutTimeout(EnvironmentProblem):
    """The deadline passed before the set was ready; carries the diagnosis (exit 3)."""

    def __init__(self, message: str, diagnosis: Diagnosis, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.diagnosis = diagnosis


# -- the endpoint and what it answers (smoke/, bench/, observe/, net/) -------------------------------------------

#: What went wrong talking to an endpoint.
ErrorKind = Literal["unreachable", "unauthorized", "http", "timeout", "protocol"]


class SmokeUnreachable(EnvironmentProblem):
    """A smoke gate that could not test its server (exit 3): `up` keeps what it installed and does not roll back."""


class EndpointError(EnvironmentProblem):
    """A failure talking to the OpenAI-compatible endpoint, already explained, with its `kind` (exit 3)."""

    def __init__(self, kind: ErrorKind, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.kind = kind


class TooLarge(EnvironmentProblem):
    """An answer past the body limit its reader set (net/capped.py); each caller words its own error (exit 3)."""


class ScrapeError(EnvironmentProblem):
    """One scrape or query of `watch` that failed: a one-line message and a hint (exit 3)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.hint: str = hint


class MetricsFormatError(CheckFailed, ValueError):
    """A `/metrics` body that is not Prometheus text (exit 1: the server answered, wrongly); a ValueError as the
    parser's own errors are."""


class ChunkFormatError(CheckFailed, ValueError):
    """A stream payload that is not an OpenAI completion chunk (exit 1: the server answered, wrongly)."""


# -- the host and the registry (preflight/, pin/) ----------------------------------------------------------------


class NvmlUnavailable(EnvironmentProblem):
    """NVML could not be loaded or initialised (no library, no driver); the caller falls back to nvidia-smi (exit 3)."""


class ImageReferenceError(UsageError, ValueError):
    """An image reference that distribution's grammar does not accept (exit 2)."""


class MalformedAnswer(EnvironmentProblem):
    """A registry's or the Hub's JSON answer whose fields have the wrong type or value, or a digest that is not
    sha256 (exit 3: the server, or a proxy in front of it, is not what it should be)."""


# -- staging weights on a node (stage/) --------------------------------------------------------------------------


class StagedFileMismatch(CheckFailed):
    """The bytes of a file read for staging do not have the sha256 or size its record lists (exit 1)."""


class StageStopped(EnvironmentProblem):
    """A copy stopped because another copier of the run failed or the run was interrupted (exit 3)."""


def cause_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from or during, outermost first (each once): the last one is the root reason."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        chain.append(cur)
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return chain
