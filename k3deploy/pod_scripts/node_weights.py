"""Node-local weights (kubernetes.weight_staging: node-local): the staging DaemonSet's loop and the serving pods'
`pick-weights` init container, one file so both name a staged copy the same way.

`stage`: (the DaemonSet, in the k3deploy image) waits for the prefetch's marker, then runs `k3deploy stage` of each
pinned snapshot from the weight volume into the tray's staging folder, one folder per repo and commit, and idles.
`pick`: (each serving pod, in the vLLM image) links WEIGHTS/target and WEIGHTS/draft to the tray's copy when its
marker names the commit the weight volume's ref resolves to, else to the weight volume's snapshot, and says which in
its termination message (what `k3deploy status` shows).

Shipped as text in the profile ConfigMap (render/staging.py); the standard library only. What to stage comes as JSON
in K3DEPLOY_PREFETCH ([[repo, revision], ...], the prefetch's own), never from string building.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping

#: The links `pick` makes, in K3DEPLOY_PREFETCH's order: the target, then the draft.
ROLES = ("target", "draft")
#: What `pick` says loaded, in its termination message and log.
NODE_LOCAL, SHARED = "node-local", "shared volume"
MARKER_SUFFIX = ".k3deploy-staged.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: Exit codes, as k3deploy's own (errors.py): usage, environment.
EXIT_USAGE, EXIT_ENVIRONMENT = 2, 3


def repos(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(repo, revision) of each snapshot to stage, as the prefetch fetched them ('main' for none)."""
    return [(str(repo), str(revision or "main")) for repo, revision in json.loads(env["K3DEPLOY_PREFETCH"])]


def repo_folder(hf_home: str, repo: str) -> str:
    """The Hub cache's folder of `repo` below HF_HOME (huggingface_hub's `models--org--name`)."""
    return os.path.join(hf_home, "hub", "models--" + repo.replace("/", "--"))


def commit_of(hf_home: str, repo: str, revision: str) -> str | None:
    """The commit `revision` names: itself when it is one, else the prefetch's ref (None when it has none yet)."""
    if _COMMIT.match(revision):
        return revision
    try:
        with open(os.path.join(repo_folder(hf_home, repo), "refs", revision), encoding="utf-8") as ref:
            commit = ref.read().strip()
    except OSError:
        return None
    return commit if _COMMIT.match(commit) else None


def staged_name(repo: str, commit: str) -> str:
    """The staged folder's name: one per repo and commit, so a new revision never overwrites the one in use."""
    return repo.replace("/", "--") + "--" + commit


def staged_copy(staging: str, repo: str, commit: str) -> str | None:
    """The tray's copy of repo@commit when its marker (k3deploy's, complete) names exactly that, else None."""
    name = staged_name(repo, commit)
    try:
        with open(os.path.join(staging, name + MARKER_SUFFIX), encoding="utf-8") as handle:
            marker = json.load(handle)
    except (OSError, ValueError):
        return None
    wanted = {"format": 1, "generator": "k3deploy", "name": name, "repo": repo, "revision": commit}
    if not isinstance(marker, dict) or any(marker.get(key) != value for key, value in wanted.items()):
        return None
    folder = os.path.join(staging, name)
    return folder if os.path.isdir(folder) and not os.path.islink(folder) else None


def pick(env: Mapping[str, str]) -> int:
    """Link each role to the tray's copy or the weight volume's snapshot; write what loaded to the termination log."""
    hf_home, staging, weights = env["HF_HOME"], env["K3DEPLOY_STAGING"], env["K3DEPLOY_WEIGHTS"]
    chosen = []
    for role, (repo, revision) in zip(ROLES, repos(env), strict=False):
        commit = commit_of(hf_home, repo, revision)
        if commit is None:
            print(f"error: the weight volume has no ref {revision} of {repo}: the prefetch has not finished")
            return EXIT_ENVIRONMENT
        local = staged_copy(staging, repo, commit)
        where = local or os.path.join(repo_folder(hf_home, repo), "snapshots", commit)
        link = os.path.join(weights, role)
        if os.path.lexists(link):
            os.unlink(link)  # the pod's own emptyDir: a restarted init container links again
        os.symlink(where, link)
        chosen.append(NODE_LOCAL if local else SHARED)
        print(f"{role}: {repo}@{commit} from the {'node-local copy' if local else 'weight volume'} {where}")
    loaded = chosen[0] if len(set(chosen)) == 1 else ", ".join(f"{r} {c}" for r, c in zip(ROLES, chosen, strict=False))
    with open(env.get("K3DEPLOY_TERMINATION_LOG", "/dev/termination-log"), "w", encoding="utf-8") as log:
        log.write(loaded)
    return 0


def _idle() -> int:
    """Stay up (a DaemonSet pod that exits is restarted) until the kubelet's TERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


def stage(env: Mapping[str, str], poll_s: float = 15.0) -> int:
    """Wait for the prefetch, stage each snapshot into the tray's folder (every repo's name kept), then idle."""
    marker, hf_home, staging = env["K3DEPLOY_PREFETCH_MARKER"], env["HF_HOME"], env["K3DEPLOY_STAGING"]
    while not os.path.exists(marker):
        print("waiting for the prefetch Job", flush=True)
        time.sleep(poll_s)
    wanted = []
    for repo, revision in repos(env):
        commit = commit_of(hf_home, repo, revision)
        if commit is None:
            print(f"error: the prefetch's marker is there but not the ref {revision} of {repo}", flush=True)
            return EXIT_ENVIRONMENT
        wanted.append((repo, commit))
    names = [staged_name(repo, commit) for repo, commit in wanted]
    cap = ["--max-mb-s", env["K3DEPLOY_STAGING_MAX_MB_S"]] if env.get("K3DEPLOY_STAGING_MAX_MB_S") else []
    for (repo, commit), name in zip(wanted, names, strict=True):
        source = os.path.join(repo_folder(hf_home, repo), "snapshots", commit)
        argv = [env.get("K3DEPLOY_BIN", "k3deploy"), "stage", source, staging, "--name", name, "--revision", commit]
        argv += [*cap, *(arg for other in names for arg in ("--in-use", other))]
        print(f"staging {repo}@{commit} into {staging}/{name}", flush=True)
        # Bounded by the prefetch's own deadline (a download of the same bytes); a run cut short resumes next start.
        try:
            done = subprocess.run(argv, check=False, timeout=float(env["K3DEPLOY_STAGING_TIMEOUT_S"]))
        except subprocess.TimeoutExpired:
            print(f"error: staging {repo}@{commit} outlasted {env['K3DEPLOY_STAGING_TIMEOUT_S']} s", flush=True)
            return EXIT_ENVIRONMENT
        if done.returncode != 0:
            return done.returncode
    print("staged: idling", flush=True)
    return _idle()


def main(argv: list[str]) -> int:
    """`node-weights.py stage` or `node-weights.py pick`."""
    if argv[1:] == ["stage"]:
        return stage(os.environ)
    if argv[1:] == ["pick"]:
        return pick(os.environ)
    print("usage: node-weights.py stage|pick", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
