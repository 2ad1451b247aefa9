"""The one error tree: each class of k3deploy/errors.py decides the exit code the CLI ends with."""

from __future__ import annotations

import inspect
import pickle

import pytest

from k3deploy import errors
from k3deploy.errors import (
    EXIT_ENVIRONMENT,
    EXIT_FAILED,
    EXIT_USAGE,
    CheckFailed,
    Diagnosis,
    EnvironmentProblem,
    K3DeployError,
    KubeError,
    UsageError,
    kube_error,
)

DIAGNOSIS = Diagnosis(subject="LeaderWorkerSet/x", reason="CrashLoopBackOff", message="m")
#: Every class of the tree and the exit code it ends the CLI with.
EXPECTED = {
    "K3DeployError": (K3DeployError("m"), EXIT_ENVIRONMENT),
    "UsageError": (UsageError("m"), EXIT_USAGE),
    "ProfileError": (errors.ProfileError("m"), EXIT_USAGE),
    "EnvironmentProblem": (EnvironmentProblem("m"), EXIT_ENVIRONMENT),
    "CheckFailed": (CheckFailed("m"), EXIT_FAILED),
    "KubeError": (KubeError("m", status=0), EXIT_ENVIRONMENT),
    "KubeCheckFailed": (errors.KubeCheckFailed("m", status=404), EXIT_FAILED),
    "KubeUsageError": (errors.KubeUsageError("m", status=422), EXIT_USAGE),
    "KubeEnvironmentProblem": (errors.KubeEnvironmentProblem("m", status=503), EXIT_ENVIRONMENT),
    "ApiTimeout": (errors.ApiTimeout("m"), EXIT_ENVIRONMENT),
    "ExecPluginTimeout": (errors.ExecPluginTimeout("m"), EXIT_ENVIRONMENT),
    "ForwardFailed": (errors.ForwardFailed("m", status=403), EXIT_ENVIRONMENT),
    "RolloutFailed": (errors.RolloutFailed("m", DIAGNOSIS), EXIT_FAILED),
    "RolloutTimeout": (errors.RolloutTimeout("m", DIAGNOSIS), EXIT_ENVIRONMENT),
    "SmokeUnreachable": (errors.SmokeUnreachable("m"), EXIT_ENVIRONMENT),
    "EndpointError": (errors.EndpointError("timeout", "m"), EXIT_ENVIRONMENT),
    "TooLarge": (errors.TooLarge("m"), EXIT_ENVIRONMENT),
    "ScrapeError": (errors.ScrapeError("m", "h"), EXIT_ENVIRONMENT),
    "MetricsFormatError": (errors.MetricsFormatError("m"), EXIT_FAILED),
    "ChunkFormatError": (errors.ChunkFormatError("m"), EXIT_FAILED),
    "NvmlUnavailable": (errors.NvmlUnavailable("m"), EXIT_ENVIRONMENT),
    "ImageReferenceError": (errors.ImageReferenceError("m"), EXIT_USAGE),
    "MalformedAnswer": (errors.MalformedAnswer("m"), EXIT_ENVIRONMENT),
    "StagedFileMismatch": (errors.StagedFileMismatch("m"), EXIT_FAILED),
    "StageStopped": (errors.StageStopped("m"), EXIT_ENVIRONMENT),
}


def test_every_class_of_the_tree_is_listed() -> None:
    classes = {name for name, obj in vars(errors).items() if inspect.isclass(obj) and issubclass(obj, Exception)}
    assert classes == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_class_decides_its_exit_code(name: str) -> None:
    error, code = EXPECTED[name]
    assert type(error).__name__ == name
    assert error.exit_code == code == type(error).exit_code
    assert (str(error), error.message) == ("m", "m")


def test_a_forwarded_exit_code_makes_the_class_of_that_code() -> None:
    """`K3DeployError(message, exit_code=N)` (an error re-worded with another's code) is that code's class, so an
    `except CheckFailed` still catches a forwarded exit 1."""
    for code, cls in ((EXIT_FAILED, CheckFailed), (EXIT_USAGE, UsageError), (EXIT_ENVIRONMENT, EnvironmentProblem)):
        error = K3DeployError("m", "h", exit_code=code)
        assert type(error) is cls and error.exit_code == code and error.hint == "h"
    odd = K3DeployError("m", exit_code=7)
    assert type(odd) is K3DeployError and odd.exit_code == 7


@pytest.mark.parametrize(
    ("code", "also"), [(EXIT_FAILED, CheckFailed), (EXIT_USAGE, UsageError), (EXIT_ENVIRONMENT, EnvironmentProblem)]
)
def test_a_kube_error_is_the_domain_error_of_its_code(code: int, also: type[K3DeployError]) -> None:
    error = kube_error("m", "h", status=409, exit_code=code, reason="Conflict", body={"kind": "Status"})
    assert isinstance(error, KubeError) and isinstance(error, also)
    assert (error.exit_code, error.status, error.reason, error.body, error.hint) == (
        code,
        409,
        "Conflict",
        {"kind": "Status"},
        "h",
    )


def test_format_errors_stay_value_errors_and_endpoint_errors_keep_their_kind() -> None:
    assert isinstance(errors.MetricsFormatError("m"), ValueError)
    assert isinstance(errors.ChunkFormatError("m"), ValueError)
    assert isinstance(errors.ImageReferenceError("m"), ValueError)
    assert errors.EndpointError("unauthorized", "m").kind == "unauthorized"


def test_a_plain_error_survives_pickling_with_its_class() -> None:
    """A process pool hands errors back pickled: the class (and so the exit code) survives the trip."""
    back = pickle.loads(pickle.dumps(K3DeployError("m", exit_code=EXIT_FAILED)))
    assert type(back) is CheckFailed and back.exit_code == EXIT_FAILED


def test_the_cause_chain_runs_outermost_first_and_ends_at_the_root_reason_even_through_a_loop() -> None:
    root = ConnectionRefusedError("refused")
    middle = OSError("connect failed")
    middle.__cause__ = root
    outer = RuntimeError("request failed")
    outer.__context__ = middle
    root.__context__ = outer  # a loop, as an exception re-raised inside its own handler makes
    assert errors.cause_chain(outer) == [outer, middle, root]
    assert errors.cause_chain(root) == [root, outer, middle]
