"""Soak: `up` / `status` / `down` on the local target, 20 rounds, interrupted at random points (seeded).

Each round runs the real CLI with the fake vLLM interpreter; `up` (and sometimes `down`) gets SIGINT or
SIGTERM after a random delay: during the interpreter's start-up, or within a stage, or never. After every
round: no process k3deploy started is left, no lock, no temporary file (in the state directory or in the
CLI's private TMPDIR), and no file outside k3deploy's own was touched — the user's model sits in the state
directory, as the single-GPU recipe of docs/guide/local-rehearsal.md lays it out, beside a file of the user's,
and `--purge` runs in some rounds.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
from pathlib import Path

from tests.targets.local.conftest import FakeLocal, servers_of

ROUNDS = 20
SEED = 11
#: Names k3deploy may leave in the state directory after `down`, besides the user's own.
K3DEPLOY_FILES = {"server.log", "server.log.prev", "owned.json", "vllm-cache"}


def snapshot(root: Path, skip: set[str]) -> dict[str, tuple[int, int, str]]:
    """Every file and folder under `root` except the top-level names in `skip`: (mode, mtime, content hash)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in skip:
            continue
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        out[str(rel)] = (info.st_mode, info.st_mtime_ns, digest)
    return out


def interrupted(
    proc: subprocess.Popen[str], delay_s: float | None, sig: signal.Signals, *, early: bool = False
) -> tuple[int, str]:
    """Signal `proc` `delay_s` after its first stage began (after it started, when `early`); (exit code, stderr).

    None runs it to the end.
    """
    assert proc.stderr is not None
    head = ""
    if delay_s is not None and not early:
        while "==> [1/" not in head and (line := proc.stderr.readline()):
            head += line
    try:
        _, err = proc.communicate(timeout=delay_s if delay_s is not None else 120)
    except subprocess.TimeoutExpired:
        if delay_s is None:
            raise
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    return proc.returncode, head + err


def test_interrupted_rounds_leave_nothing_behind(fake_local: FakeLocal) -> None:
    rng = random.Random(SEED)
    state = fake_local.state_dir
    state.mkdir()
    model = state / "model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (model / "model.safetensors").write_bytes(os.urandom(4096))
    (state / "NOTES.txt").write_text("the user's own file\n")
    fake_local.model = model
    user_before = snapshot(fake_local.root, {"state", "tmp"}) | {
        f"state/{k}": v for k, v in snapshot(state, K3DEPLOY_FILES).items()
    }
    codes: list[int] = []
    for _ in range(ROUNDS):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        when = rng.choices(["never", "early", "in a stage"], [2, 2, 6])[0]
        delay = None if when == "never" else rng.uniform(0.0, 1.5) if when == "early" else rng.uniform(0.0, 3.0)
        code, err = interrupted(fake_local.popen("up"), delay, sig, early=when == "early")
        codes.append(code)
        if when == "early":  # it may arrive before the interpreter runs k3deploy's code: then it ends by the signal
            assert code in (0, 130, 143, -sig), err
        else:
            # Ended by the signal itself (which a shell also reports as 128 + N) only after k3deploy had handled it,
            # or after the command's work was done, while the interpreter exited.
            handled = "error: interrupted" in err or "summary (up " in err
            assert code in (0, 130, 143) or (code == -sig and handled), err
            assert "Traceback" not in err, err
        # However it ended, it let go of the lock and left no half-written file.
        assert [p.name for p in state.iterdir() if p.name == "k3deploy.lock" or p.name.startswith(".")] == []
        status = fake_local.run("status", extra=("-o", "json"))
        assert status.returncode == 0, status.stderr
        purge = ("--purge",) if rng.random() < 0.3 else ()
        if rng.random() < 0.3:  # a down interrupted too, then finished by another
            interrupted(fake_local.popen("down", extra=("--yes", *purge)), rng.uniform(0.3, 2.0), sig)
        done = fake_local.run("down", extra=("--yes", *purge))
        assert done.returncode == 0, done.stderr

        assert servers_of(state) == []
        assert list(fake_local.tmp.iterdir()) == []
        leftovers = {p.name for p in state.iterdir()} - K3DEPLOY_FILES - {"model", "NOTES.txt"}
        assert leftovers == set()  # no lock, record, half-written temporary file
        user_after = snapshot(fake_local.root, {"state", "tmp"}) | {
            f"state/{k}": v for k, v in snapshot(state, K3DEPLOY_FILES).items()
        }
        assert user_after == user_before
    assert 0 in codes, codes  # the rounds left alone passed
