"""The rehearsal model of a kubernetes.host_vllm profile (cluster-cpu): generated into its host folder before the
set is applied when the folder holds none yet, as the local target generates its own (targets/local/rehearsal.py).
The folder is the nodes' too only where they share this machine's folders (a one-machine cluster)."""

from __future__ import annotations

from pathlib import Path

from k3deploy.profile.model import Profile
from k3deploy.reporter import Reporter
from k3deploy.targets.local import rehearsal


def ensure_host_model(profile: Profile, reporter: Reporter) -> None:
    """Generate the rehearsal model in kubernetes.host_vllm.model_dir when it holds none; a folder that is something
    else is never written (rehearsal.ensure_rehearsal_model refuses it). Nothing for other profiles."""
    host = profile.kubernetes.host_vllm
    if host is None or host.model_dir is None or not profile.model.rehearsal:
        return
    dest = Path(host.model_dir)
    if rehearsal.is_rehearsal_model(dest):
        return
    reporter.note(f"  rehearsal model: generating it in {dest} (random weights, not Kimi K3)")
    if rehearsal.can_generate_here():
        rehearsal.ensure_rehearsal_model(dest)
    else:
        rehearsal.ensure_rehearsal_model_with(host.python or "python3", dest)
