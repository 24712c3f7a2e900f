"""Progress of long commands on stderr (docs/cli.md, "Progress").

The core is told nothing about terminals: it calls ``progress(message)`` at each phase
(``review.pr_audit.run_pr_audit``, ``review.suggest.run.run_suggest``). This module
decides what the user sees:

* on a terminal (stderr is a TTY and ``CI`` is not set): one live line, rich's spinner
  with the phase, erased when the work ends;
* in CI (``CI`` set and not empty, stderr not a terminal): the first phase at once — it
  says what the command reads and why (``taxonomy.yaml changed: auditing all N recipes
  on both sides``) — then at most one heartbeat line every :data:`HEARTBEAT` seconds
  while the work lasts, naming the current phase and the time so far;
* elsewhere (a pipe or a file outside CI: scripts, hooks, tests): nothing, so what a
  script reads on stderr is errors and warnings only;
* with ``-v``: every phase as a line with its time, wherever stderr goes;
* with ``-q``: nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from provenance.cli.options import Settings
from provenance.escaping import terminal

#: Seconds between two heartbeat lines in CI.
HEARTBEAT = 10.0


class Progress:
    """A ``progress(message)`` callable for the core, and a context manager that ends it."""

    def __init__(
        self,
        stream: TextIO,
        mode: str,
        *,
        interval: float = HEARTBEAT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.mode = mode
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.message = ""
        self.printed: float | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._status: object | None = None

    # the core's callback ------------------------------------------------------------
    def __call__(self, message: str) -> None:
        message = terminal(message)
        if self.mode == "off":
            return
        with self._lock:
            first = not self.message
            self.message = message
            if self.mode == "lines" or (self.mode == "heartbeat" and first):
                self._line(message)
            elif self.mode == "live":
                self._live(message)
        if self.mode == "heartbeat" and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="progress", daemon=True)
            self._thread.start()

    def _elapsed(self) -> str:
        return f"{self.clock() - self.started:.0f} s"

    def _line(self, message: str) -> None:
        stamp = f" ({self._elapsed()})" if self.mode == "lines" else ""
        self.stream.write(f"provenance: {message}{stamp}\n")
        self.stream.flush()
        self.printed = self.clock()

    def _beat(self) -> None:
        while not self._done.wait(self.interval / 4):
            with self._lock:
                since = self.clock() - (self.printed if self.printed is not None else 0.0)
                if since >= self.interval:
                    self.stream.write(f"provenance: still {self.message} ({self._elapsed()})\n")
                    self.stream.flush()
                    self.printed = self.clock()

    def _live(self, message: str) -> None:
        from rich.console import Console
        from rich.status import Status

        if self._status is None:
            console = Console(file=self.stream, highlight=False, markup=False, emoji=False)
            status = Status(message, console=console)
            status.start()
            self._status = status
        assert isinstance(self._status, Status)
        self._status.update(message)

    # the command's end ----------------------------------------------------------------
    def close(self) -> None:
        """Stop the live line or the heartbeat (before the report is written)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._status is not None:
                from rich.status import Status

                assert isinstance(self._status, Status)
                self._status.stop()
                self._status = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def progress_mode(options: Settings, stream: TextIO) -> str:
    """``off`` (``-q``, or neither a terminal nor CI), ``lines`` (``-v``), ``live`` (a
    terminal outside CI) or ``heartbeat`` (CI)."""
    if options.quiet:
        return "off"
    if options.verbose:
        return "lines"
    if os.environ.get("CI"):
        return "heartbeat"
    tty = bool(getattr(stream, "isatty", lambda: False)())
    return "live" if tty else "off"


def progress_for(options: Settings, stream: TextIO) -> Progress:
    """The progress of a command run with ``options``, written to ``stream`` (stderr)."""
    return Progress(stream, progress_mode(options, stream))
