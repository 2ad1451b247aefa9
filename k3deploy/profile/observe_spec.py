"""The `observe` section of a profile: where figures are pushed, and the scheduled performance canary (pure).

Kept apart from profile/model.py, which holds it as `Profile.observe`, so that module stays one screenful of sections.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, HttpUrl, field_validator, model_validator

from k3deploy import prompts
from k3deploy.profile.base import _Strict
from k3deploy.profile.cron import longest_gap_s

#: The key of the canary's report ConfigMap that holds its last JSON report (observe/canary_report.py writes it).
REPORT_KEY = "report.json"
#: The runbook page of the documentation site (mkdocs.yml's site_url + operations/runbooks/), one anchor per alert:
#: the default of observe.runbook_base_url.
RUNBOOK_BASE_URL = "https://k3deploy.github.io/k3deploy/operations/runbooks/"
#: The built-in subsets the canary's dataset ConfigMap is rendered from (bench's `--dataset builtin --subset`).
CANARY_SUBSETS = ("qualitative", "throughput")


class CanarySpec(_Strict):
    """`observe.canary`: an opt-in CronJob that runs `k3deploy bench` at the published method (bs=1, temperature 1.0,
    top_p 0.95) against a gated leader, pushes its figures to the Pushgateway and keeps its last report."""

    enabled: bool = Field(False, description="Render the canary CronJob, its dataset, report ConfigMap and RBAC.")
    schedule: str = Field(
        "17 */6 * * *",
        description="The CronJob's schedule (cron, or @hourly/@daily/...); the staleness alert fires after twice its "
        "longest gap without a successful run, and drift compares a run with the one a gap before.",
    )
    time_zone: str | None = Field(None, description="The CronJob's spec.timeZone (IANA name); null: the controller's.")
    subset: Literal["qualitative", "throughput"] = Field(
        "throughput",
        description="The built-in set's subset the dataset ConfigMap is rendered from: SPEED-Bench's qualitative "
        "categories, or its entropy tiers.",
    )
    categories: list[str] = Field(
        default_factory=lambda: ["low_entropy"],
        min_length=1,
        description="Categories (qualitative) or tiers (throughput) benched; each gets an acceptance-length series.",
    )
    requests: int = Field(2, ge=1, le=16, description="Requests per category, one at a time (bs=1).")
    output_tokens: int = Field(1536, ge=2, le=32768, description="Output tokens per request (the published 1,536).")
    temperature: float = Field(1.0, ge=0, description="The published method's temperature.")
    top_p: float = Field(0.95, gt=0, le=1, description="The published method's top_p.")
    tolerance: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="Drift: the alert fires when decode tok/s is below targets.decode_tok_s x (1 - tolerance) for "
        "two consecutive runs.",
    )
    acceptance_floors: dict[str, float] = Field(
        default_factory=dict,
        description="Per-category minimum acceptance length; a category not named here uses "
        "targets.min_acceptance_length.",
    )
    group: int = Field(0, ge=0, description="The serving group whose leader is benched (its cluster DNS name).")
    deadline_s: int = Field(
        3600, ge=60, le=6 * 3600, description="activeDeadlineSeconds of each run: a hung run is killed."
    )
    starting_deadline_s: int = Field(
        600, ge=10, description="startingDeadlineSeconds: a run that could not start this late is skipped."
    )
    history: int = Field(3, ge=1, le=10, description="Successful and failed Jobs kept (history limits).")
    report_max_bytes: int = Field(
        256 * 1024,
        ge=16 * 1024,
        le=900 * 1024,
        description="Upper bound of the report kept in the report ConfigMap (per-request records are dropped past "
        "it); a ConfigMap holds at most 1 MiB.",
    )

    @field_validator("schedule")
    @classmethod
    def _is_a_schedule(cls, value: str) -> str:
        longest_gap_s(value)  # raises ValueError naming what is wrong
        return value

    @field_validator("acceptance_floors")
    @classmethod
    def _floors_are_lengths(cls, value: dict[str, float]) -> dict[str, float]:
        for category, floor in value.items():
            if floor < 1:
                raise ValueError(f"acceptance floor of {category!r} is {floor}: an acceptance length is at least 1")
        return value

    @model_validator(mode="after")
    def _prompts_exist(self) -> CanarySpec:
        counts: dict[str, int] = {}
        for prompt in prompts.subset(self.subset):
            counts[prompt.category] = counts.get(prompt.category, 0) + 1
        for category in self.categories:
            if category not in counts:
                raise ValueError(
                    f"canary category {category!r} is not in the built-in {self.subset} subset "
                    f"(it has {', '.join(counts)})"
                )
            if counts[category] < self.requests:
                raise ValueError(
                    f"canary requests {self.requests}: the built-in {self.subset}/{category} has {counts[category]} "
                    "prompts, each sent once"
                )
        return self

    @property
    def period_s(self) -> int:
        """The longest gap between two runs of the schedule, in seconds."""
        return longest_gap_s(self.schedule)


class ObserveSpec(_Strict):
    """Where k3deploy sends figures beside Prometheus's scrapes, and the performance canary."""

    pushgateway_url: HttpUrl | None = Field(
        None,
        description="Prometheus Pushgateway `k3deploy bench --push profile` and the canary push to (e.g. "
        "http://pushgateway.monitoring.svc:9091); null: no push.",
    )
    canary: CanarySpec = Field(default_factory=CanarySpec)
    runbook_base_url: HttpUrl = Field(
        HttpUrl(RUNBOOK_BASE_URL),
        description="The page every rendered alert's runbook_url points into, followed by `#runbook-<alert name in "
        "lower case>`: the documentation site's runbook page by default; a site that mirrors the docs names its own.",
    )

    @field_validator("runbook_base_url")
    @classmethod
    def _no_fragment(cls, url: HttpUrl) -> HttpUrl:
        """Each alert appends its own `#anchor`: a base that already has one would make every link wrong."""
        if url.fragment:
            raise ValueError(f"{url} has a fragment (#{url.fragment}); each alert adds its own anchor")
        return url
