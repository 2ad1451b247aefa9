"""What a target renders: files in apply order or one YAML stream, each produced on first use.

Its own module, standard library only, so `k3deploy render` loads it without a target's rollout machinery.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence

from k3deploy.kobject import KubeObject

__all__ = ["Objects", "Rendering"]

#: A rendered set as the target methods take it: the objects in apply order.
Objects = Sequence[KubeObject]


class Rendering:
    """What `render` writes: files in apply order (a folder) or one YAML stream (stdout).

    The files and the stream are produced on first use: `up`'s render stage needs only the summary. A command
    renders once and passes its Rendering along: `objects` is the set every later step of that command works on
    (the lock's Namespace, preflight's access review, the plan, the in-cluster smoke Job, `down`'s removal).
    """

    def __init__(
        self,
        files: Callable[[], dict[str, str]],
        stream: Callable[[], str],
        what: str,
        summary: str = "",
        objects: Objects = (),
    ) -> None:
        self._files, self._stream = files, stream
        self._objects = list(objects)
        #: What the files hold, for `render`'s "wrote ... to DIR" line.
        self.what = what
        #: What the pipeline's render stage adds after "capacity plan fits" ("" for nothing).
        self.summary = summary

    @property
    def objects(self) -> list[KubeObject]:
        """The rendered objects in apply order (a Kubernetes set; empty for a target that renders no objects), a
        copy each time: a step that changes what it applies leaves the command's set as rendered."""
        return copy.deepcopy(self._objects)

    @functools.cached_property
    def files(self) -> dict[str, str]:
        """File name -> content, in apply order."""
        return self._files()

    @functools.cached_property
    def stream(self) -> str:
        """The whole rendering as one YAML stream."""
        return self._stream()
