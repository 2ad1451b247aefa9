"""How a smoke gate reached the server it judged, and the rule that decides whether a failed gate rolls back.

A gate reaches its server through an endpoint the user gave (`--endpoint`, `--group-endpoint`,
`kubernetes.endpoint_override`), a port-forward through the API server to a leader pod (the default on a cluster),
the smoke Job inside the cluster (`--smoke in-cluster`), or the address the target names (`direct`: the local
server). `Reach` says which, for the progress line, the summary and `-o json`.

The rule: only a smoke that reached the server and found a check or target failed (exit 1) rolls back. One that
could not test the server at all (no forward, nothing answered, a refused key, never ready: exit 3) is a
`SmokeUnreachable`: the new install stays in place, and the error says how to smoke it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from k3deploy.errors import SmokeUnreachable as SmokeUnreachable  # re-exported beside `unreachable`, which makes it
from k3deploy.redact import redact_url

#: `up --smoke in-cluster` (DeployOptions.smoke_where): every gate runs as a smoke Job in the cluster.
IN_CLUSTER = "in-cluster"
ReachKind = Literal["endpoint", "port-forward", "in-cluster", "direct"]


@dataclass(frozen=True)
class Reach:
    """Where a gate's smoke requests go (`url`), how they get there (`kind`, `target`), and how to smoke by hand."""

    url: str
    kind: ReachKind
    #: The URL given, `pod/<namespace>/<pod>:<port>` for a port-forward, `job/<namespace>/<name>` in-cluster.
    target: str
    #: What to run to smoke the same server by hand (shown when the gate could not test it).
    retry_hint: str = ""

    def describe(self) -> str:
        """`via port-forward to pod/ns/pod:8000`, `via --endpoint http://...`, `via the in-cluster Job job/ns/x`."""
        if self.kind == "port-forward":
            return f"via port-forward to {self.target}"
        if self.kind == "in-cluster":
            return f"via the in-cluster smoke Job {self.target}"
        if self.kind == "endpoint":
            return f"via the given endpoint {redact_url(self.target)}"
        return f"at {redact_url(self.target)}"

    def to_dict(self) -> dict[str, Any]:
        """For `-o json` and the recorded verdict."""
        return {"kind": self.kind, "target": redact_url(self.target), "url": redact_url(self.url)}


def unreachable(message: str, reach: Reach | None, hint: str | None = None) -> SmokeUnreachable:
    """The gate's error: the install is kept; the hint says how to smoke it by hand (and why nothing was undone)."""
    how = (reach.retry_hint if reach is not None else "") or hint or ""
    kept = "nothing was rolled back (the smoke never reached the server's checks)"
    return SmokeUnreachable(message, hint=f"{kept}; {how}" if how else kept)
