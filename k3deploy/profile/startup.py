"""The serving pods' start-up budget (pure): how long the startup probe and VLLM_ENGINE_READY_TIMEOUT_S give a group
to load the weights from the cache and compile, derived from the storage's read rate and the checkpoint's size.

budget = (model.checkpoint_bytes + speculative.draft_bytes) / storage.read_mb_s  +  storage.compile_allowance_s,
rounded up to the startup probe's period; `kubernetes.startup_probe_budget_s` overrides it when set. Every tray reads
the whole checkpoint from the shared weight cache while the group's trays load together, so the rate is one tray's
share of what the storage gives.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from k3deploy.profile.base import _Strict

#: Period of the leader's startup probe; the failure threshold spreads the budget over it.
STARTUP_PROBE_PERIOD_S = 10
#: Default read rate: the one field report for this checkpoint, 1.56 TB in ~95 min from NFS (~8 min from local
#: NVMe), i.e. ~270 MB/s per tray from a network file system, what the ReadWriteMany weight cache is.
DEFAULT_READ_MB_S = 270
#: Default compile and graph allowance: a cold torch.compile of the target and the draft, FlashInfer's JIT and the
#: CUDA-graph capture for speculative decoding up to max_num_seqs; a warm compile cache (kubernetes.compile_cache)
#: takes less, and the budget is a bound, not a wait.
DEFAULT_COMPILE_ALLOWANCE_S = 1800


class StorageSpec(_Strict):
    """How fast the serving pods read the weight cache: what their start-up budget is derived from."""

    read_mb_s: Annotated[float, Field(gt=0)] = Field(
        DEFAULT_READ_MB_S,
        description="MB/s one tray reads the weight cache at while the group's trays load together. Default 270: "
        "the field report for Kimi K3's 1.56 TB, ~95 min from NFS (~8 min, ~3,250 MB/s, from local NVMe). Measure "
        "yours (e.g. fio or a timed `cat` of one shard from a pod on the PVC) and set it.",
    )
    compile_allowance_s: Annotated[int, Field(ge=0)] = Field(
        DEFAULT_COMPILE_ALLOWANCE_S,
        description="Seconds allowed after the weights are read: torch.compile, FlashInfer JIT and CUDA-graph "
        "capture on a cold compile cache.",
    )


@dataclass(frozen=True)
class StartupBudget:
    """The start-up budget and where each part comes from."""

    weight_bytes: int
    read_mb_s: float
    compile_allowance_s: int
    override_s: int | None
    #: Where read_mb_s comes from: the profile's field, or a rate `stage` or the prefetch measured.
    read_source: str = "storage.read_mb_s"

    @property
    def read_s(self) -> int:
        """Seconds to read the target's and the draft's weights at read_mb_s."""
        return math.ceil(self.weight_bytes / (self.read_mb_s * 1_000_000))

    @property
    def derived_s(self) -> int:
        """Read time plus the compile allowance, rounded up to the probe period."""
        raw = self.read_s + self.compile_allowance_s
        return max(STARTUP_PROBE_PERIOD_S, math.ceil(raw / STARTUP_PROBE_PERIOD_S) * STARTUP_PROBE_PERIOD_S)

    @property
    def total_s(self) -> int:
        """The budget the pods get: kubernetes.startup_probe_budget_s when set, else the derived one."""
        return self.override_s if self.override_s is not None else self.derived_s

    @property
    def probe_failures(self) -> int:
        """The startup probe's failureThreshold at STARTUP_PROBE_PERIOD_S."""
        return math.ceil(self.total_s / STARTUP_PROBE_PERIOD_S)

    def measured(self, mb_s: float, source: str) -> StartupBudget:
        """The budget at a measured rate instead of storage.read_mb_s (what `plan` and `preflight` show)."""
        return dataclasses.replace(self, read_mb_s=mb_s, read_source=source)

    def parts(self) -> list[str]:
        """One line per part, naming the profile field it comes from (what `plan` prints)."""
        lines = [
            f"weights: {self.weight_bytes / 1e12:.3f} TB (model.checkpoint_bytes + speculative.draft_bytes) at "
            f"{self.read_source} {self.read_mb_s:g} MB/s = {self.read_s:,} s",
            f"compile and CUDA graphs: storage.compile_allowance_s = {self.compile_allowance_s:,} s",
        ]
        if self.override_s is None:
            lines.append(
                f"total: {self.total_s:,} s (the sum, rounded up to the {STARTUP_PROBE_PERIOD_S} s probe period)"
            )
        else:
            lines.append(
                f"total: {self.total_s:,} s, set by kubernetes.startup_probe_budget_s (derived: {self.derived_s:,} s)"
            )
        lines.append(
            f"startup probe {self.probe_failures} x {STARTUP_PROBE_PERIOD_S} s; VLLM_ENGINE_READY_TIMEOUT_S={self.total_s}"
        )
        return lines
