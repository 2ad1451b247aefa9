"""Progress of a staging run: a rich bar on a terminal, else one plain line per interval on stderr (a DaemonSet's
log), both fed by the copiers' byte counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from k3deploy.console import err, is_interactive, plain
from k3deploy.stage.plan import MB, mb_per_s


class Progress:
    """Counts bytes from every copier (thread-safe) and shows them until closed."""

    def __init__(self, total: int, done: int, interval_s: float, *, live: bool | None = None) -> None:
        self.total, self.done, self.interval_s = total, done, interval_s
        self.copied = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._live = is_interactive() if live is None else live
        self._thread: threading.Thread | None = None
        self._bar: Callable[[int], None] | None = None

    def add(self, nbytes: int) -> None:
        """Count `nbytes` more copied."""
        with self._lock:
            self.copied += nbytes
        if self._bar is not None:
            self._bar(nbytes)

    def line(self) -> str:
        """The plain progress line."""
        now = self.done + self.copied
        share = 100 * now / self.total if self.total else 100.0
        rate = mb_per_s(self.copied, time.monotonic() - self.started)
        return f"staged {now / MB:,.0f} of {self.total / MB:,.0f} MB ({share:.0f}%), {rate} MB/s"

    def _lines(self) -> None:
        while not self._closed.wait(self.interval_s):
            plain(self.line())

    def __enter__(self) -> Progress:
        if self._live:
            # rich is loaded only for a terminal's bar.
            from rich.progress import BarColumn, DownloadColumn, TransferSpeedColumn
            from rich.progress import Progress as RichProgress

            bar = RichProgress(BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=err, transient=True)
            task = bar.add_task("stage", total=self.total, completed=self.done)
            bar.start()
            self._stop_bar = bar.stop
            self._bar = lambda n: bar.advance(task, n)
        else:
            self._thread = threading.Thread(target=self._lines, name="stage-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar = None
            self._stop_bar()
