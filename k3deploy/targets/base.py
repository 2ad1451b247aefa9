"""The contract every deployment target meets, so the pipeline can run preflight -> ... -> rollback on any."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult


class Revision(BaseModel):
    """What was live before an apply (opaque to the pipeline), so a failed `up` can restore it."""

    target: str
    number: int | None = None
    data: dict[str, Any] = {}


class ApplyOutcome(BaseModel):
    """What an apply did: changed is False when the live state already matched."""

    changed: bool
    summary: str
    created: list[str] = []


class Target(Protocol):
    """A place a profile is deployed to."""

    name: str

    def preflight(self, profile: Profile) -> list[CheckResult]:
        """Checks that need this target's environment (cluster or host)."""

    def current_revision(self, profile: Profile) -> Revision | None:
        """What is live now, or None when nothing is deployed."""

    def apply(self, profile: Profile) -> ApplyOutcome:
        """Make the live state match the profile; idempotent."""

    def wait_ready(self, profile: Profile, timeout_s: float) -> None:
        """Block until serving; raise a K3DeployError carrying a diagnosis on failure or timeout."""

    def endpoint(self, profile: Profile) -> str:
        """Base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000."""

    def rollback(self, profile: Profile, previous: Revision | None) -> str:
        """Restore `previous` (or remove what a first install created); return what was done."""

    def status(self, profile: Profile) -> dict[str, Any]:
        """A JSON-able description of what is live."""

    def down(self, profile: Profile, purge: bool) -> str:
        """Remove the deployment (keeping cached weights unless purge); a no-op when nothing is there."""
