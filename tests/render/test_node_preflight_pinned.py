"""render/node_preflight.py: the node-preflight Job `up` pins to the eligible hosts is the Job the template renders
for a profile that lists those hosts (but for the profile digest of its pods), and nothing else of the set moves."""

from __future__ import annotations

from k3deploy.profile import load_profile
from k3deploy.render.manifests import PROFILE_DIGEST_ANNOTATION, rendered_objects
from k3deploy.render.node_preflight import is_node_preflight, pinned, with_hosts

K3 = "kimi-k3-gb300-tp16"
HOSTS = ["gb300-0", "gb300-1", "gb300-2", "gb300-3", "gb300-7"]


def test_the_pinned_job_is_the_one_the_template_renders_for_those_hosts() -> None:
    plain = rendered_objects(load_profile(K3))
    listed = rendered_objects(load_profile(K3, [f"kubernetes.node_preflight_hosts=[{','.join(HOSTS)}]"]))
    (job,) = [o for o in plain if is_node_preflight(o)]
    (rendered,) = [o for o in listed if is_node_preflight(o)]
    ours = pinned(job, HOSTS)
    assert ours != rendered  # the template's pods carry the digest of the profile that lists the hosts ...
    digest = ours["spec"]["template"]["metadata"]["annotations"][PROFILE_DIGEST_ANNOTATION]
    assert digest == job["spec"]["template"]["metadata"]["annotations"][PROFILE_DIGEST_ANNOTATION]
    rendered["spec"]["template"]["metadata"]["annotations"][PROFILE_DIGEST_ANNOTATION] = digest
    assert ours == rendered  # ... and are otherwise the same Job
    assert job["spec"].get("completionMode") is None  # the input is left as it was


def test_only_the_job_of_the_set_changes() -> None:
    plain = rendered_objects(load_profile(K3))
    out = with_hosts(plain, HOSTS)
    changed = [o["metadata"]["name"] for o, p in zip(out, plain, strict=True) if o != p]
    assert changed == [f"{K3}-node-preflight"]
