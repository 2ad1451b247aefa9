"""Pod Security label parsing (pure logic); what `preflight --cluster` says of a namespace's labels, and what the
real PodSecurity admission does with the set's pods, is tested on the real plane
(tests/realk8s/preflight/test_pod_security_admission.py)."""

from __future__ import annotations

from k3deploy.preflight.checks_psa import namespace_levels

ENFORCE, WARN, AUDIT = (f"pod-security.kubernetes.io/{mode}" for mode in ("enforce", "warn", "audit"))


def test_audit_fails_open_and_warn_fails_closed() -> None:
    assert namespace_levels({AUDIT: "bogus", WARN: "bogus"}) == {"warn": "restricted", "audit": "privileged"}


def test_an_unparsable_enforce_level_is_judged_restricted() -> None:
    # The real API server's PodSecurity admission refuses such a label on a namespace it admits; one written before
    # it ran (or past it) is evaluated as restricted, so preflight judges it so.
    assert namespace_levels({ENFORCE: "strict"}) == {"enforce": "restricted"}
