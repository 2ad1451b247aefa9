"""What a target renders: files in apply order or one YAML stream, each produced on first use.

Its own module, standard library only, so `k3deploy render` loads it without a target's rollout machinery.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["Rendering"]


class Rendering:
    """What `render` writes: files in apply order (a folder) or one YAML stream (stdout).

    The files and the stream are produced on first use: `up`'s render stage needs only the summary.
    """

    def __init__(
        self, files: Callable[[], dict[str, str]], stream: Callable[[], str], what: str, summary: str = ""
    ) -> None:
        self._files, self._stream = files, stream
        #: What the files hold, for `render`'s "wrote ... to DIR" line.
        self.what = what
        #: What the pipeline's render stage adds after "capacity plan fits" ("" for nothing).
        self.summary = summary

    @functools.cached_property
    def files(self) -> dict[str, str]:
        """File name -> content, in apply order."""
        return self._files()

    @functools.cached_property
    def stream(self) -> str:
        """The whole rendering as one YAML stream."""
        return self._stream()
