"""The canary's recording rules and alerts (observe.canary), a rule group of the rendered PrometheusRule. Pure.

The series are the Pushgateway's (observe/canary_series.py), scraped with honor_labels so their grouping key stays;
each holds the last run's figure until the next run replaces it. With P the schedule's longest gap between runs:
- drift: `decode offset P` is the run before the last one, so a run is slow *twice* when both the value now and the
  value P ago are under targets.decode_tok_s x (1 - tolerance); one slow run between fast ones does not fire;
- staleness: no successful run for 2 x P (the success stamp's age; or no stamp at all for 2 x P);
- acceptance: a category's acceptance length under its floor (observe.canary.acceptance_floors, else
  targets.min_acceptance_length) in the last run.
"""

from __future__ import annotations

from k3deploy.observe import canary_series as series
from k3deploy.observe.alert_rule import Alert
from k3deploy.profile.model import Profile

#: Recording rules: how many of the last two runs were slow (0, 1, 2), and the last run's decode over the target.
SLOW_RUNS = "k3deploy:canary_decode_tok_s:slow_runs"
RATIO = "k3deploy:canary_decode_tok_s:ratio_to_target"
#: The labels one canary's series share (the push's job and grouping key).
KEY = "job, " + ", ".join(series.GROUPING_LABELS)


def duration(seconds: int) -> str:
    """A Prometheus duration: `6h`, `90m`, `45s`."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def drift_bound(profile: Profile) -> float | None:
    """targets.decode_tok_s x (1 - observe.canary.tolerance); None without a decode target."""
    target = profile.targets.decode_tok_s
    return None if target is None else target * (1 - profile.observe.canary.tolerance)


def floors(profile: Profile) -> dict[str, float]:
    """Each canary category's acceptance-length floor (none without speculation or a floor)."""
    if profile.speculative is None:
        return {}
    canary, default = profile.observe.canary, profile.targets.min_acceptance_length
    out = {c: canary.acceptance_floors.get(c, default) for c in canary.categories}
    return {c: f for c, f in out.items() if f is not None}


def _selector(profile: Profile, **extra: str) -> str:
    labels = {"job": series.JOB, "release": profile.name, **extra}
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def recording_rules(profile: Profile) -> list[dict[str, object]]:
    """The slow-run count and the ratio to the target (empty without a decode target)."""
    bound, target = drift_bound(profile), profile.targets.decode_tok_s
    if bound is None or target is None:
        return []
    decode = series.DECODE + _selector(profile)
    period = duration(profile.observe.canary.period_s)
    return [
        {"record": SLOW_RUNS, "expr": f"({decode} < bool {bound:g}) + ({decode} offset {period} < bool {bound:g})"},
        {"record": RATIO, "expr": f"{decode} / {target:g}"},
    ]


def canary_alerts(profile: Profile) -> list[Alert]:
    """Drift, staleness (stale or absent) and per-category acceptance."""
    name, canary = profile.name, profile.observe.canary
    period, twice = duration(canary.period_s), duration(2 * canary.period_s)
    stamp = series.LAST_SUCCESS + _selector(profile)
    out: list[Alert] = []
    bound = drift_bound(profile)
    if bound is not None:
        out.append(
            Alert(
                "K3DeployCanaryDecodeDrift",
                f"{series.DECODE}{_selector(profile)} and on ({KEY}) ({SLOW_RUNS}{_selector(profile)} == 2)",
                "0m",
                "warning",
                f"{name}: canary decode below {bound:g} tok/s in two consecutive runs",
                f'The canary measured {{{{ $value | printf "%.0f" }}}} tok/s decode (bs=1, TTFT excluded) on group '
                f"{{{{ $labels.group }}}}, and the run {period} before it was also below {bound:g} tok/s "
                f"(targets.decode_tok_s {profile.targets.decode_tok_s:g} less {canary.tolerance:.0%}): image "
                "{{ $labels.image_digest }}, draft {{ $labels.draft_revision }}.",
            )
        )
    out.append(
        Alert(
            "K3DeployCanaryStale",
            f"time() - max by ({KEY}) ({stamp}) > {2 * canary.period_s}",
            "0m",
            "warning",
            f"{name}: no successful canary run for {twice}",
            f"The last successful canary run of group {{{{ $labels.group }}}} finished {{{{ $value | humanizeDuration }}}} "
            f"ago, over twice the schedule's {period}: runs fail (requests failed, the leader unreachable) or do not "
            "start.",
        )
    )
    out.append(
        Alert(
            "K3DeployCanaryAbsent",
            f"absent({stamp})",
            twice,
            "warning",
            f"{name}: the canary has never pushed a successful run",
            f"No success stamp of the canary in Prometheus for {twice}: the CronJob does not run, cannot push to "
            "observe.pushgateway_url, or Prometheus does not scrape the Pushgateway (with honor_labels).",
        )
    )
    found = floors(profile)
    if found:
        expr = " or ".join(
            f"{series.ACCEPTANCE}{_selector(profile, category=c)} < {f:g}" for c, f in sorted(found.items())
        )
        out.append(
            Alert(
                "K3DeployCanaryAcceptanceLow",
                expr,
                "0m",
                "warning",
                f"{name}: a canary category's acceptance length is below its floor",
                'The canary measured acceptance length {{ $value | printf "%.2f" }} on {{ $labels.category }} '
                "(group {{ $labels.group }}, draft {{ $labels.draft_revision }}), below its floor "
                f"({', '.join(f'{c} {f:g}' for c, f in sorted(found.items()))}).",
            )
        )
    return out


def canary_group(profile: Profile) -> dict[str, object] | None:
    """The canary's rule group; None when the canary is off."""
    if not profile.observe.canary.enabled:
        return None
    base = str(profile.observe.runbook_base_url)
    rules: list[dict[str, object]] = [
        *recording_rules(profile),
        *(alert.rule(base) for alert in canary_alerts(profile)),
    ]
    return {"name": f"k3deploy.{profile.name}.canary", "rules": rules}
