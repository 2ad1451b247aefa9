"""The lease's pure parts: who holds it, until when, and what a second command is told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from k3deploy.targets.kubernetes.lease import held_error, holder_of, identity

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _lease(who: str | None, renewed: datetime, duration: int = 60) -> dict:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"spec": {"holderIdentity": who, "leaseDurationSeconds": duration, "acquireTime": stamp, "renewTime": stamp}}


def test_a_renewed_lease_is_held_a_lapsed_or_freed_one_is_not() -> None:
    held = holder_of(_lease("a@h pid 1 (up)", NOW - timedelta(seconds=30)), NOW)
    assert held is not None and held.identity == "a@h pid 1 (up)"
    assert held.expires == NOW + timedelta(seconds=30)
    assert holder_of(_lease("a@h pid 1 (up)", NOW - timedelta(seconds=61)), NOW) is None
    assert holder_of(_lease(None, NOW), NOW) is None
    assert holder_of(None, NOW) is None


def test_the_second_command_is_told_who_holds_it_and_exits_3() -> None:
    holder = holder_of(_lease("alice@tray1 pid 77 (up)", NOW), NOW)
    assert holder is not None
    error = held_error("kimi", "ml", holder)
    assert error.exit_code == 3
    assert error.message.startswith("release 'kimi' in ml is held by alice@tray1 pid 77 (up) since 2026-12-01T12:00:00")
    assert "Lease/kimi-k3deploy-lock in ml lapses by itself" in (error.hint or "")


def test_identity_names_user_host_pid_and_command() -> None:
    import os

    assert f"pid {os.getpid()} (apply)" in identity("apply") and "@" in identity("apply")
