"""k3deploy deletes only what it created: the ownership mark, set at creation only (pure logic; what `up` and
`down --purge` keep on a cluster is shown on the real plane, tests/realk8s/rollout/test_ownership.py)."""

from __future__ import annotations

from k3deploy.rollout.ownership import OWNER_ANNOTATION, OWNER_LABEL, for_apply, owned

RELEASE = "kimi-k3-gb300-tp16"
NAMESPACE = "kimi-k3"
PVC = f"{RELEASE}-model-cache"
RENDERED = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/instance": RELEASE}},
}


def test_the_mark_goes_on_at_creation_stays_on_what_has_it_and_never_goes_on_what_another_made() -> None:
    created = for_apply(RENDERED, None)
    assert created is not None and created["metadata"]["labels"][OWNER_LABEL] == RELEASE
    assert created["metadata"]["annotations"][OWNER_ANNOTATION] == f"{NAMESPACE}/{RELEASE}"
    assert owned(created, RENDERED)
    # Re-applied with the mark: an apply without it would take the field away from k3deploy's field manager.
    assert for_apply(RENDERED, created) == created
    users = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    assert for_apply(RENDERED, users) is None and not owned(users, RENDERED)
    users_pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": PVC, "namespace": NAMESPACE}}
    rendered_pvc = {
        **users_pvc,
        "metadata": {**users_pvc["metadata"], "labels": {"app.kubernetes.io/instance": RELEASE}},
    }
    assert for_apply(rendered_pvc, users_pvc) == rendered_pvc
    # Another release's mark is not this one's.
    other = for_apply(
        {**RENDERED, "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/instance": "x"}}}, None
    )
    assert other is not None and not owned(other, RENDERED)
