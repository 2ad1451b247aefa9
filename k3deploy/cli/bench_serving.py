"""What `bench --ab/--sweep` and `bench --dataset random` need of a target, built here for the bench stage so bench
imports neither the pipeline nor a target: a variant is served by the pipeline's `apply` on the profile's Target and
put back by its `restore`; a rehearsal profile's tokenizer is the folder the local target generates its model in."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from k3deploy import pipeline
from k3deploy.errors import K3DeployError, UsageError
from k3deploy.profile import Profile
from k3deploy.reporter import Reporter
from k3deploy.targets import target_for
from k3deploy.targets.base import Revision, Target
from k3deploy.targets.local.launch import MODEL_DIR, default_state_dir
from k3deploy.targets.local.rehearsal import is_rehearsal_model


@dataclass(frozen=True)
class TargetServing:
    """bench/ab.py's `Serving` through the pipeline on one Target."""

    target: Target

    @property
    def serves_variants(self) -> bool:
        """Whether the target restarts its server per variant (the local one)."""
        return self.target.serves_variants

    def current(self, profile: Profile) -> Revision | None:
        """The revision live now."""
        return self.target.current_revision(profile)

    def serve(self, profile: Profile, reporter: Reporter) -> str:
        """render -> apply -> wait; the endpoint once it answers."""
        summary = pipeline.apply(profile, self.target, reporter)
        try:
            summary.raise_for_status()
        except K3DeployError as exc:
            raise K3DeployError(
                f"serving {profile.name} for bench failed: {exc.message}", hint=exc.hint, exit_code=exc.exit_code
            ) from None
        return self.target.endpoint(profile)

    def restore(self, profile: Profile, previous: object, reporter: Reporter) -> str:
        """Put `previous` back (or take down what bench served when nothing was live)."""
        assert previous is None or isinstance(previous, Revision)  # what `current` returned
        return pipeline.restore(profile, self.target, previous)


def serving_for(profile: Profile) -> TargetServing:
    """The profile's target, served through the pipeline."""
    return TargetServing(target_for(profile))


def rehearsal_tokenizer(profile: Profile) -> str:
    """The folder of the rehearsal model the local target generated for `profile`: its tokenizer."""
    folder = default_state_dir(profile, Path.home(), os.environ.get("XDG_CACHE_HOME")) / MODEL_DIR
    if is_rehearsal_model(folder):
        return str(folder)
    raise UsageError(
        f"--dataset random needs the rehearsal model's tokenizer, and {folder} holds none yet",
        hint="serve it once (`k3deploy up -p local-cpu`), or pass --tokenizer PATH",
    )
