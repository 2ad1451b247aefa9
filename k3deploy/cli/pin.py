"""The `pin` command: resolve a profile's floating versions (image tags, Hub branches) and write it pinned."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import ProfileOpt, SetOpt, app
from k3deploy.reporter import Reporter

if TYPE_CHECKING:
    from k3deploy.pin.image_vllm import ImageVllm


@app.command()
def pin(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="File to write the pinned profile to, or '-' for stdout (default)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing file that k3deploy did not write (never a symlink).")
    ] = False,
    timeout: Annotated[
        str, typer.Option("--timeout", help="Bound on the whole command's registry and Hub requests (e.g. 2m).")
    ] = "5m",
) -> None:
    """Pin a profile: image tags to digests (checking the nodes' platform is built), Hub revisions to commits.

    Exit 1 when an image is not built for the nodes' platform or does not exist, 3 when the registry or the
    Hub cannot be reached. Images are read from kubernetes.registry_mirrors, or K3DEPLOY_REGISTRY_URL (one URL,
    or registry=url pairs); HF_ENDPOINT points at a Hub mirror; HF_TOKEN reads private and gated repos.
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.duration import parse_duration
    from k3deploy.kube.deadline import Deadline
    from k3deploy.pin.hub import HubClient
    from k3deploy.pin.registry import RegistryClient
    from k3deploy.pin.run import check_pinned_output, pin_profile, write_pinned
    from k3deploy.profile import load_profile

    out = check_pinned_output(output, force=force)  # before the registry and the Hub are asked anything
    deadline = Deadline(parse_duration(timeout, "--timeout"))
    mirrors = load_profile(profile, list(set_ or [])).kubernetes.registry_mirrors
    with RegistryClient(mirrors=mirrors, deadline=deadline) as registry, HubClient(deadline=deadline) as hub:
        outcome = pin_profile(profile, list(set_ or []), registry, hub, deadline)
    write_pinned(outcome.text, out)
    reporter = Reporter()
    if not outcome.rows:
        reporter.say(
            "nothing to pin: the profile names no Hub model and no image (a local target with local or generated weights)"
        )
    for row in outcome.rows:
        change = f"{row.before} -> {row.after}" if row.before != row.after else f"{row.after} (unchanged)"
        reporter.say(f"{row.field}: {change}  [{row.note}]")
    if outcome.vllm is not None:
        _say_vllm(outcome.vllm, reporter)
    if output not in (None, "-"):
        reporter.say(f"wrote the pinned profile to {output}")


def _say_vllm(found: ImageVllm, reporter: Reporter) -> None:
    """Which vLLM the image runs, and a warning when it is not the one the rendered flags were checked against."""
    for line in found.lines():
        reporter.say(line)
