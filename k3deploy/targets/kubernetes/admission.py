"""Decide `kubernetes.gang_admission: auto` against the cluster, before a deploying command renders its set.

A release already running keeps the mode its LeaderWorkerSet records (`k3deploy/gang-admission`, written by the
render): a cluster that gains or loses Kueue later never changes a running release's template by itself; the kueue
preflight checks then say what is missing. A new release gets kueue when preflight's reading of Kueue finds a usable
setup (preflight/checks_kueue.py `unusable`), and none otherwise, with the placement WARN preflight prints for none.
"""

from __future__ import annotations

from k3deploy.errors import K3DeployError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.kube.port import KubePort
from k3deploy.lws import API_VERSION as LWS_API
from k3deploy.preflight.checks_kueue import unusable
from k3deploy.preflight.kueue import kueue_facts
from k3deploy.profile.model import Profile
from k3deploy.reporter import Reporter

#: Where the render records the mode a set was made with (templates/leaderworkerset.yaml.j2).
RECORD = "k3deploy/gang-admission"
MODES = ("none", "kueue", "volcano")


def with_mode(profile: Profile, mode: str) -> Profile:
    """`profile` with gang_admission set to `mode` (a decided `auto`)."""
    kube = profile.kubernetes.model_copy(update={"gang_admission": mode})
    return profile.model_copy(update={"kubernetes": kube})


def decide(api: KubePort, profile: Profile, namespace: str) -> tuple[str, str]:
    """The mode `auto` stands for in `namespace`, and why (one line)."""
    live = api.get(LWS_API, "LeaderWorkerSet", profile.name, namespace)
    recorded = str(((live or {}).get("metadata") or {}).get("annotations", {}).get(RECORD, ""))
    if recorded in MODES:
        return recorded, f"as recorded on the running LeaderWorkerSet/{profile.name}"
    # The set is rendered once, after this decision: Kueue's LeaderWorkerSet integration is tried on it by
    # preflight (k8s.kueue.leaderworkerset), which FAILs a kueue set the integration does not take.
    why = unusable(profile, kueue_facts(api, profile, namespace, None))
    if why:
        return "none", f"no usable Kueue ({why}); groups are scheduled pod by pod"
    return "kueue", f"Kueue admits each group whole through LocalQueue {profile.kubernetes.kueue_queue}"


def settle(profile: Profile, kube: KubeOptions, reporter: Reporter) -> Profile:
    """The Kubernetes `profile` with an `auto` gang admission decided against the cluster (and said through `reporter`);
    any other admission unchanged, without reading the cluster (the command asks only for a Kubernetes profile)."""
    if profile.kubernetes.gang_admission != "auto":
        return profile
    try:
        api = KubeApi(kube)
    except K3DeployError:
        return profile  # no usable configuration: the command's own first use of the cluster says so, as its error
    try:
        mode, why = decide(api, profile, kube.namespace or profile.kubernetes.namespace)
    except K3DeployError:
        # The command's own first step meets the same cluster next and says why as its one error line; were the
        # cluster back by then, the set renders auto as none and preflight's placement check says what that risks.
        return profile
    finally:
        api.close()
    # Only a change from the default rendering is said: `none` renders as `auto` always did, and where that can
    # split a group preflight's placement check WARNs (the fallback), so its line would be noise on every run.
    if mode != "none":
        reporter.note(f"gang admission auto: {mode} ({why})")
    return with_mode(profile, mode)
