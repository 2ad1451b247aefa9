"""Report stage: result models shared by preflight, smoke and up, and their rich views."""

from k3deploy.report.model import CheckResult, Status

__all__ = ["CheckResult", "Status"]
