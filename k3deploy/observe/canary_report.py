"""`bench --report-configmap NAMESPACE/NAME`: the run's JSON report kept in a ConfigMap (the canary's last report),
bounded in size, for `status`, `watch` and, saved to a file, `bench compare`.

The ConfigMap must exist (the rendered set makes it, empty): the canary's Role lets it read and replace that one
object and create nothing. A report over the bound drops its per-request records first (the figures stay), and
says so in its notes; one still over it is refused.
"""

from __future__ import annotations

from k3deploy.errors import CheckFailed, EnvironmentProblem, UsageError
from k3deploy.kube.port import KubePort
from k3deploy.profile.observe_spec import REPORT_KEY
from k3deploy.report.bench import BenchReport


def parse_ref(value: str) -> tuple[str, str]:
    """(namespace, name) of `NAMESPACE/NAME`."""
    namespace, _, name = value.partition("/")
    if not namespace or not name or "/" in name:
        raise UsageError(
            f"--report-configmap {value!r} is not NAMESPACE/NAME", hint="--report-configmap kimi-k3/NAME-canary-report"
        )
    return namespace, name


def bounded_json(report: BenchReport, max_bytes: int) -> str:
    """The report as JSON within `max_bytes`: whole, else without its per-request records."""
    text = report.to_json()
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    slim = report.model_copy(
        update={
            "requests": [],
            "notes": [*report.notes, f"per-request records dropped to keep the report under {max_bytes} bytes"],
        }
    ).to_json()
    if len(slim.encode("utf-8")) > max_bytes:
        raise CheckFailed(
            f"the report is {len(slim.encode('utf-8'))} bytes without its requests, over the {max_bytes} bytes kept",
            hint="raise observe.canary.report_max_bytes (up to 900 KiB), or bench fewer categories",
        )
    return slim


def keep(api: KubePort, ref: str, report: BenchReport, max_bytes: int) -> None:
    """Replace the ConfigMap's report with this one (its other keys and metadata left as they are)."""
    namespace, name = parse_ref(ref)
    live = api.get("v1", "ConfigMap", name, namespace)
    if live is None:
        raise EnvironmentProblem(
            f"ConfigMap {namespace}/{name} does not exist: the report has nowhere to go",
            hint="apply the rendered set with observe.canary.enabled (it makes the ConfigMap)",
        )
    live["data"] = {**(live.get("data") or {}), REPORT_KEY: bounded_json(report, max_bytes)}
    api.replace(live)


def read(api: KubePort, namespace: str, name: str) -> BenchReport | None:
    """The report a ConfigMap keeps; None when the ConfigMap or its report is missing or unreadable."""
    live = api.get("v1", "ConfigMap", name, namespace)
    text = ((live or {}).get("data") or {}).get(REPORT_KEY)
    if not text:
        return None
    try:
        return BenchReport.model_validate_json(text)
    except ValueError:
        return None
