"""`bench --ab` / `--sweep` on the local target: serve each variant, bench it, then put back what was live.

Variants differ only by profile overrides (`speculative=null` for the baseline, `KEY=VALUE` per sweep value);
everything else (prompts, output length, temperature, load) is the same for all of them. With --repeat N the
variants run interleaved, A B A B ... (N rounds, one server start per variant per round), so a drift of the host
falls on both; each variant's report holds its rounds as the repeats of every cell. Serving is a `Serving`
the command layer passes in (cli/bench_serving.py: the pipeline's `apply`, render -> apply -> wait, on the
profile's Target), so bench knows neither the pipeline nor any target. At the end the revision that was live before
is restored (or, when nothing was, the server bench started is taken down) — on failure and Ctrl-C too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from k3deploy.bench.cli_run import Request, make_plan, profile_sets, progress_bar
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import Measured, assemble, measure
from k3deploy.errors import K3DeployError, UsageError
from k3deploy.profile import Profile, load_profile
from k3deploy.report.bench import BenchReport
from k3deploy.reporter import Reporter

BASELINE = "baseline"
SPECULATIVE = "speculative"


def parse_sweep(raw: str) -> tuple[str, list[str]]:
    """`key.path=v1,v2,...` as (key, values); at least one value."""
    key, sep, values = raw.partition("=")
    items = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or not key.strip() or not items:
        raise UsageError(
            f"--sweep {raw!r} is not KEY=V1,V2,...",
            hint="for example --sweep speculative.num_speculative_tokens=1,2,3,5",
        )
    for value in items:
        # Each value names a report file (NAME-KEY=VALUE.json): checked here, before any server is started.
        if "/" in value or "\0" in value or any("\ud800" <= ch <= "\udfff" for ch in value):
            raise UsageError(
                f"--sweep {key.strip()}: value {value!r} cannot name a report file ('/', NUL or invalid Unicode)",
                hint="sweep plain values, e.g. --sweep speculative.num_speculative_tokens=1,2,3",
            )
    return key.strip(), items


def variants(ab: bool, sweep: str | None) -> list[tuple[str, list[str]]]:
    """(label, extra overrides) per variant: the baseline first with --ab, then speculation or each sweep value."""
    out: list[tuple[str, list[str]]] = [(BASELINE, ["speculative=null"])] if ab else []
    if sweep:
        key, values = parse_sweep(sweep)
        short = key.rsplit(".", 1)[-1]
        out += [(f"{short}={value}", [f"{key}={value}"]) for value in values]
    elif ab:
        out.append((SPECULATIVE, []))
    return out


class Serving(Protocol):
    """How the variants are served and what was live is put back, for one base profile."""

    @property
    def serves_variants(self) -> bool:
        """Whether this target restarts its server per variant (only the local one does)."""
        ...

    def current(self, profile: Profile) -> object:
        """What is live now, handed back to `restore` at the end."""
        ...

    def serve(self, profile: Profile, reporter: Reporter) -> str:
        """Serve `profile` until it answers; its endpoint. A failed rollout raises K3DeployError saying so."""
        ...

    def restore(self, profile: Profile, previous: object, reporter: Reporter) -> str:
        """Put back `previous` (or take down what bench served when it is None); what was done, in words."""
        ...


def _restore(profile: Profile, serving: Serving, previous: object, reporter: Reporter) -> None:
    try:
        reporter.note("restoring what was live before bench: " + serving.restore(profile, previous, reporter))
    except K3DeployError as exc:
        reporter.warn(f"could not restore the previous state: {exc.message}")


def run_variants(request: Request, serving_for: Callable[[Profile], Serving]) -> list[BenchReport]:
    """Serve and bench each variant in turn through `serving_for(base profile)`; one report per variant, in order."""
    if request.endpoint:
        raise UsageError(
            "--ab and --sweep serve the variants themselves: drop --endpoint", hint="k3deploy bench --ab -p local-cpu"
        )
    base = load_profile(request.profile, profile_sets(request))
    serving = serving_for(base)
    if not serving.serves_variants:
        raise UsageError(
            f"--ab / --sweep restart the server, which k3deploy does only on a local profile ({base.name} is {base.target})",
            hint="on Kubernetes: render a variant with --set, roll it out, bench it, then `bench compare` (docs/guide/bench.md)",
        )
    if request.ab and base.speculative is None:
        raise UsageError(
            f"--ab: profile {base.name} has no speculative section to compare against",
            hint="pick a profile with speculative decoding",
        )
    reporter = Reporter(quiet=request.quiet)
    plan = variants(request.ab, request.sweep)
    profiles = [
        load_profile(request.profile, profile_sets(request) + extra) for _, extra in plan
    ]  # all checked before serving
    plans = [make_plan(request, profile, label) for (label, _), profile in zip(plan, profiles, strict=True)]
    for p in plans:
        p.repeat = 1  # a round is one pass of every variant: A B A B ..., never A A B B
    select(load_dataset(request.dataset, request.subset), request.categories, request.num_prompts)  # so is the data
    previous = serving.current(base)
    passes: list[list[Measured]] = [[] for _ in plan]
    try:
        for round_ in range(request.repeat):
            for i, ((label, _), profile) in enumerate(zip(plan, profiles, strict=True)):
                reporter.note(
                    f"==> bench variant {label}"
                    + (f", round {round_ + 1} of {request.repeat}" if request.repeat > 1 else "")
                )
                endpoint = serving.serve(profile, reporter)
                with progress_bar(request.quiet, f"bench {label}") as options:
                    options.api_key = request.api_key
                    passes[i].append(measure(profile, endpoint, plans[i], options))
    finally:
        _restore(base, serving, previous, reporter)
    return [assemble(profile, p, runs) for profile, p, runs in zip(profiles, plans, passes, strict=True)]
