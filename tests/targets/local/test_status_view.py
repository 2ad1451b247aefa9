"""The local target's `status` view and `up`'s log block print text from files and the server as text: terminal
escapes (CSI `ESC [`, OSC `ESC ] ... BEL`, C1 controls) in a model name, a recorded verdict or a log line are
shown as `\\x1b` and never reach the terminal raw."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from k3deploy.profile import load_profile
from k3deploy.targets.local import process
from k3deploy.targets.local.status_view import local_down_question, local_status_view

#: A screen clear, a window title set through OSC, a C1 CSI and a right-to-left override.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202e"


def _rendered(renderable: object) -> str:
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, color_system=None, width=200).print(renderable)
    return buffer.getvalue()


def _running(**fields: object) -> dict[str, object]:
    report: dict[str, object] = {
        "running": True,
        "profile": "local-cpu",
        "pid": 4242,
        "endpoint": "http://127.0.0.1:8000",
        "model": "m",
        "revision": "r1",
        "started_at": "2026-01-01T00:00:00+00:00",
        "matches_profile": True,
        "log": "/state/vllm.log",
        "healthy": True,
    }
    report.update(fields)
    return report


def _no_raw_controls(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\x07\x9b\u202e")


def test_status_shows_a_hostile_model_found_by_and_verdict_as_escapes() -> None:
    shown = _rendered(
        local_status_view(
            _running(model=f"evil{HOSTILE}", found_by=f"note{HOSTILE}", last_smoke={"status": f"PASS{HOSTILE}"})
        )
    )
    assert _no_raw_controls(shown), repr(shown)
    assert "evil\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202e" in shown
    assert "PASS\\x1b[2J" in shown and "note\\x1b[2J" in shown


def test_status_of_a_stopped_server_shows_its_detail_as_escapes() -> None:
    shown = _rendered(
        local_status_view({"running": False, "profile": f"p{HOSTILE}", "detail": HOSTILE, "state_dir": f"/s{HOSTILE}"})
    )
    assert _no_raw_controls(shown), repr(shown)
    assert "state directory: /s\\x1b[2J" in shown


def test_a_recorded_smoke_that_is_not_a_mapping_is_shown_not_raised() -> None:
    shown = _rendered(local_status_view(_running(last_smoke=["PASS"])))
    assert "last smoke: " in shown and "Traceback" not in shown


def test_downs_question_shows_a_recorded_endpoint_as_escapes() -> None:
    question = local_down_question(
        load_profile("local-cpu"), True, _running(endpoint=HOSTILE, state_dir=f"/s{HOSTILE}")
    )
    assert _no_raw_controls(question), repr(question)
    assert "\\x1b]0;owned\\x07" in question


def test_the_log_tail_up_prints_shows_escapes_from_the_servers_log(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(f"INFO starting\nERROR boom{HOSTILE}\n", encoding="utf-8")
    tail = process.log_tail(log)
    assert tail == ["INFO starting", "ERROR boom\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202e"]
