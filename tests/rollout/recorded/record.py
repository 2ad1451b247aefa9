"""Record, from the real control plane, the live states the plan tests replay (tests/rollout/recorded/*.json).

Re-record (after a change to what `read_lws` reads, to the LWS the profile renders, or to the plane's versions):

    bash .ci/build-realk8s              # once: the plane's binaries (tests/realk8s/binaries.py)
    python -m tests.rollout.recorded.record

from the repository root (a few minutes on 2 cores). It starts a plane of its own (tests/realk8s/plane.py: a real
kube-apiserver, etcd, scheduler, controller manager, KWOK nodes and the real LeaderWorkerSet controller), rolls the
GB300 profile out with the real CLI exactly as the realk8s rollout tests do (tests/realk8s/rollout/
test_upgrade_groups.py, test_bluegreen.py), and at each state below calls k3deploy's own `read_lws` against the plane
through a recorder that keeps every request it makes and the server's answer:

- `absent`: nothing installed yet (the LeaderWorkerSet's get answers 404);
- `one_group`: one group after a first `up` (blue-green's case), read for the installed and a changed template;
- `two_groups`: two groups after a first `up`, read as a gated walk for the installed and a changed template;
- `two_groups_mid_walk`: the same two groups after an `up` of the changed template whose smoke of group 1 failed
  with `--no-rollback`: partition held at 1, group 1 on the new template, group 0 on the old one.

Each file holds the profile's overrides (`sets`), the LeaderWorkerSets they render that `read_lws` was given
(`lws`), what it answered on the plane (`answers`) and the reads themselves (`reads`, replayed by replay.py):
`managedFields` are dropped, and so are pod specs (the template is the LeaderWorkerSet's; the walk reads a pod's
labels and status). The recorder refuses any apply that is not a server dry run, so recording changes nothing the
CLI did not.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.rollout.colours import lws_of
from k3deploy.rollout.plan import Strategy
from k3deploy.targets.kubernetes.upgrade import read_lws
from tests.realk8s.binaries import find_binaries
from tests.realk8s.cluster_fixtures import NEW_IMAGE, NO_DRA, PROFILE, SCRIPTED, TWO, Deployment
from tests.realk8s.plane import Plane, PlaneOptions
from tests.rollout.recorded.replay import HERE, answer_of, apply_key, get_key, list_key, rendered
from tests.smoke.scripted_server import Script, scripted_server

#: What a gated walk and a blue-green are read with (`up`, `up --strategy blue-green`, each with its smoke).
WALK = Strategy(group_smoke=True)
BLUE_GREEN = Strategy(name="blue-green", group_smoke=True)
#: Three cliques of four GB300 trays: a one-group release beside a two-group one.
PLANE = {"gb300_nodes": 12, "cliques": 3}


def sets_of(*args: str) -> list[str]:
    """The `--set` values among CLI arguments."""
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--set"]


def profile_sets(namespace: str, *args: str) -> list[str]:
    """The overrides the CLI loads the profile with for `-n namespace` and `args` (its NO_DRA included)."""
    return [*sets_of(*NO_DRA, *args), f"kubernetes.namespace={namespace}"]


def rendered_lws(sets: list[str]) -> dict[str, Any]:
    """The LeaderWorkerSet the profile renders with `sets`."""
    found = lws_of(rendered(sets))
    assert found is not None, "the profile renders no LeaderWorkerSet"
    return found


def trimmed(obj: Any, drop_spec: bool = False) -> Any:
    """`obj` without what says nothing to a reader of it: managedFields (and a pod's spec when `drop_spec`)."""
    if not isinstance(obj, dict):
        return obj
    out = copy.deepcopy(obj)
    (out.get("metadata") or {}).pop("managedFields", None)
    if drop_spec:
        out.pop("spec", None)
    return out


class Recorder:
    """k3deploy's KubeApi, keeping each get, list and dry-run apply and the server's answer (an apply that is not a
    dry run is refused)."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.reads: dict[str, dict[str, Any]] = {"get": {}, "list": {}, "apply": {}}

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The real get, kept."""
        answer = self.api.get(api_version, kind, name, namespace)
        self.reads["get"].setdefault(get_key(api_version, kind, name, namespace), trimmed(answer))
        return answer

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """The real list, kept (pods without their spec)."""
        items, version = self.api.list(
            api_version, kind, namespace, label_selector=label_selector, field_selector=field_selector
        )
        key = list_key(api_version, kind, namespace, label_selector, field_selector)
        self.reads["list"].setdefault(key, [trimmed(item, drop_spec=kind == "Pod") for item in items])
        return items, version

    def apply(self, obj: dict[str, Any], *, force: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """The real server dry run, kept; anything else is refused."""
        if not dry_run:
            raise AssertionError(f"the recorder changes nothing: refused a real apply of {obj['kind']}")
        answer = self.api.apply(obj, force=force, dry_run=True)
        self.reads["apply"].setdefault(apply_key(obj, force), trimmed(answer))
        return answer


def record(name: str, api: KubeApi, strategy: Strategy, sets: dict[str, list[str]], about: str) -> None:
    """Read the LeaderWorkerSet rendered with each of `sets` with `strategy` through a Recorder and write
    tests/rollout/recorded/<name>.json."""
    recorder = Recorder(api)
    lws = {label: rendered_lws(overrides) for label, overrides in sets.items()}
    answers = {label: answer_of(read_lws(recorder, obj, strategy)) for label, obj in lws.items()}
    out = {
        "about": about,
        "strategy": asdict(strategy),
        "answers": answers,
        "sets": sets,
        "lws": lws,
        "reads": recorder.reads,
    }
    # One value a line keeps a re-recording's diff readable; no indentation keeps the file a third smaller.
    (HERE / f"{name}.json").write_text(json.dumps(out, indent=0, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"recorded {name}: {json.dumps(answers)}", file=sys.stderr)


def up(deploy: Deployment, *args: str, expect: int = 0) -> None:
    """`k3deploy up ARGS` on the plane; stops the recording when it exits otherwise than `expect`."""
    done = deploy.k3("up", *args)
    if done.returncode != expect:
        raise SystemExit(f"up {' '.join(args)} exited {done.returncode}, not {expect}:\n{done.stderr}")


def record_one_group(plane: Plane, api: KubeApi, workdir: Path) -> None:
    """`absent` and `one_group`: before and after a first install of one group."""
    deploy = Deployment(plane, "k3-recorded-one", workdir)
    installed = profile_sets(deploy.namespace, *SCRIPTED)
    changed = profile_sets(deploy.namespace, *SCRIPTED, *NEW_IMAGE)
    record("absent", api, BLUE_GREEN, {"installed": installed}, "before any install: no LeaderWorkerSet")
    up(deploy, *SCRIPTED, "--skip-smoke")
    about = "one group after `up --skip-smoke`, read as `up --strategy blue-green`"
    record("one_group", api, BLUE_GREEN, {"installed": installed, "new_image": changed}, about)


def record_two_groups(plane: Plane, api: KubeApi, workdir: Path) -> None:
    """`two_groups` and `two_groups_mid_walk`: after a first install of two groups, then after a walk stopped at
    group 1 (its smoke failed; --no-rollback leaves the partition held)."""
    deploy = Deployment(plane, "k3-recorded-two", workdir)
    installed = profile_sets(deploy.namespace, *TWO, *SCRIPTED)
    changed = profile_sets(deploy.namespace, *TWO, *SCRIPTED, *NEW_IMAGE)
    up(deploy, *TWO, *SCRIPTED, "--skip-smoke")
    about = "two groups after `up --skip-smoke`, read as `up` with its smoke (a gated walk)"
    record("two_groups", api, WALK, {"installed": installed, "new_image": changed}, about)
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as server:
        endpoints = ("--endpoint", server.url, "--group-endpoint", server.url)
        up(deploy, *TWO, *SCRIPTED, *NEW_IMAGE, *endpoints, "--no-rollback", expect=1)
    live = api.get("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", PROFILE, deploy.namespace) or {}
    held = live["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].get("partition")
    if held != 1:
        raise SystemExit(f"the stopped walk left partition {held}, not 1: not the mid-walk state to record")
    about = (
        "the two groups after `up` of the new image whose smoke of group 1 failed, with --no-rollback: partition "
        "held at 1, group 1 on the new template, group 0 on the old one; read as `up` of the new image again"
    )
    record("two_groups_mid_walk", api, WALK, {"new_image": changed}, about)


def main() -> int:
    """Start a plane, record every state, stop it; 3 when the plane's binaries are not built."""
    try:
        binaries = find_binaries()
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="k3deploy-record-") as tmp:
        workdir = Path(tmp)
        options = PlaneOptions(workdir=workdir / "plane", **PLANE)
        (workdir / "plane").mkdir()
        with Plane(binaries, options) as plane:
            config = plane.kubeconfig(workdir / "admin.kubeconfig")
            plane.admin_kubeconfig = config
            api = KubeApi(KubeOptions(kubeconfig=str(config)))
            record_one_group(plane, api, workdir)
            record_two_groups(plane, api, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
