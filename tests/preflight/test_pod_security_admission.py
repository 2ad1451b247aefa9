"""Pod Security label parsing (pure logic) and the check of a namespace made beforehand without the enforce label
(WARN with the `kubectl label` command); what `preflight --cluster` says of a namespace's labels, and what the real
PodSecurity admission does with the set's pods, is tested on the real plane
(tests/realk8s/preflight/test_pod_security_admission.py)."""

from __future__ import annotations

from k3deploy.preflight.checks_psa import namespace_levels, pod_security_check
from k3deploy.preflight.facts import ClusterFacts
from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import CheckResult, Status

ENFORCE, WARN, AUDIT = (f"pod-security.kubernetes.io/{mode}" for mode in ("enforce", "warn", "audit"))


def test_audit_fails_open_and_warn_fails_closed() -> None:
    assert namespace_levels({AUDIT: "bogus", WARN: "bogus"}) == {"warn": "restricted", "audit": "privileged"}


def test_an_unparsable_enforce_level_is_judged_restricted() -> None:
    # The real API server's PodSecurity admission refuses such a label on a namespace it admits; one written before
    # it ran (or past it) is evaluated as restricted, so preflight judges it so.
    assert namespace_levels({ENFORCE: "strict"}) == {"enforce": "restricted"}


def _check(exists: bool, labels: dict[str, str], sets: list[str] | None = None) -> CheckResult:
    profile = load_profile("kimi-k3-gb300-tp16", sets or [])
    facts = ClusterFacts(
        server_version="v1.34.1",
        resources=[],
        nodes=[],
        namespace="kimi-k3",
        namespace_exists=exists,
        namespace_labels=labels,
    )
    return pod_security_check(facts, rendered_objects(profile))


def test_a_namespace_made_beforehand_without_enforce_warns_with_the_label_command() -> None:
    result = _check(True, {})
    assert (
        result.status is Status.WARN and "made beforehand without pod-security.kubernetes.io/enforce" in result.detail
    )
    assert result.hint == (
        "kubectl label namespace kimi-k3 --overwrite pod-security.kubernetes.io/enforce=baseline "
        "pod-security.kubernetes.io/warn=baseline pod-security.kubernetes.io/audit=baseline"
    )
    # The level the set's own Namespace would carry (kubernetes.pod_security_level).
    assert "enforce=privileged" in _check(True, {}, ["kubernetes.pod_security_level=privileged"]).hint
    # Only warn set: enforce is still the cluster's default.
    assert _check(True, {WARN: "baseline"}).status is Status.WARN


def test_a_labelled_namespace_or_one_up_creates_passes() -> None:
    assert _check(True, {ENFORCE: "baseline", WARN: "baseline", AUDIT: "baseline"}).status is Status.PASS
    created = _check(False, {})
    assert created.status is Status.PASS and "to be created by `up`" in created.detail


def test_a_baseline_namespace_fails_the_staging_daemonset_and_the_hint_names_privileged() -> None:
    """kubernetes.weight_staging node-local: the DaemonSet's and the serving pods' hostPath need privileged."""
    staged = ["kubernetes.weight_staging=node-local", "kubernetes.pod_security_level=privileged"]
    result = _check(True, {ENFORCE: "baseline"}, staged)
    assert (
        result.status is Status.FAIL
        and "DaemonSet/kimi-k3-gb300-tp16-weight-staging: host-path-volumes" in result.detail
    )
    assert result.hint == (
        "the set needs privileged (kubernetes.pod_security_level): kubectl label namespace kimi-k3 --overwrite "
        "pod-security.kubernetes.io/enforce=privileged pod-security.kubernetes.io/warn=privileged "
        "pod-security.kubernetes.io/audit=privileged"
    )
    assert _check(True, {ENFORCE: "privileged"}, staged).status is Status.PASS
