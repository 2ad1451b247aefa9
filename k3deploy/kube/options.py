"""`KubeOptions`: a command's kubectl-style connection options and its deadline.

Standard library only (with kube/deadline.py): targets/__init__.py imports it, and the rehearsal generator
(targets/local/rehearsal.py) imports that package under an interpreter that may have nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from k3deploy.kube.deadline import Deadline


@dataclass(frozen=True)
class KubeOptions:
    """The kubectl-style connection options of a command, and the deadline every API request of it is held to."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    deadline: Deadline = field(default_factory=Deadline, compare=False)
