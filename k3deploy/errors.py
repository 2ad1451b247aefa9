"""The one error type of k3deploy and the exit codes it maps to.

0 all passed · 1 the tool worked and the system failed a check or target ·
2 usage or profile error · 3 environment / infrastructure (API unreachable, NVML missing, timeout).
"""

from __future__ import annotations

from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3


class K3DeployError(Exception):
    """Base error: a one-line message, an optional hint, and the exit code it ends the CLI with."""

    exit_code: int = EXIT_ENVIRONMENT
    #: What a failed rollout found (rollout/diagnosis.py's Diagnosis), shown in the run's summary; None elsewhere.
    diagnosis: Any = None

    def __init__(self, message: str, hint: str | None = None, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
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
