"""The one exception hierarchy of ``provenance``.

Every error a user can cause or meet carries its own user-facing diagnostic
(``diagnostic()``) and the exit code the CLI maps it to. Only the CLI layer
turns these into exit codes; the core raises them and never calls ``sys.exit``.

Exit codes (see ``docs/cli.md``):

====  ==========================================================
0     success
1     the gate found guide-only combinations not covered by a declaration
2     usage error (bad option, unknown selection, a RECIPE or an input directory that
      does not exist: a ledger without its evidence directory)
3     invalid input: a recipe, ledger, evidence file or script is malformed
4     ledger or evidence integrity failure (hash mismatch, dangling reference,
      suspect evidence, a concurrent writer holds the lock)
5     network or GitHub API failure (offline, rate limit, HTTP error)
6     cannot write: the disk is full, or a ledger, evidence or output
      directory is read-only or not writable; nothing was half-written
====  ==========================================================
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTEGRITY = 4
EXIT_NETWORK = 5
EXIT_WRITE = 6

#: errno values that can only mean a write the system refused (outside a write, an
#: ``EACCES``/``EPERM`` may be a read; the writers map those themselves).
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def _inert(text: str) -> str:
    """Each line of a diagnostic made terminal-safe: key paths, file names and values in
    messages come from untrusted files (a YAML key can hold an escape sequence)."""
    from provenance.escaping import terminal

    return "\n".join(terminal(line) for line in text.split("\n"))


@dataclass(frozen=True)
class SourceLocation:
    """A place in an input file. ``line``/``column`` are 1-based; ``key_path`` is dotted."""

    path: str
    line: int | None = None
    column: int | None = None
    key_path: str | None = None

    def render(self) -> str:
        text = self.path
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        if self.key_path:
            text += f" ({self.key_path})"
        return text


class ProvenanceError(Exception):
    """Base of every error ``provenance`` raises on purpose."""

    exit_code: int = EXIT_INPUT
    label: str = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def diagnostic(self) -> str:
        """The full, user-facing text of this error (no traceback), safe for a terminal."""
        text = f"{self.label}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return _inert(text)


class UsageError(ProvenanceError):
    """The command line asked for something that does not exist or cannot be combined."""

    exit_code = EXIT_USAGE
    label = "usage error"


class InputError(ProvenanceError):
    """An input file (recipe, ledger, evidence, script, config) is malformed.

    Always names the file, and the line and key path when they are known.
    """

    exit_code = EXIT_INPUT
    label = "invalid input"

    def __init__(
        self,
        message: str,
        *,
        location: SourceLocation | None = None,
        path: str | Path | None = None,
        line: int | None = None,
        key_path: str | None = None,
        hint: str | None = None,
    ) -> None:
        if location is None and path is not None:
            location = SourceLocation(str(path), line=line, key_path=key_path)
        self.location = location
        super().__init__(message, hint=hint)

    def diagnostic(self) -> str:
        where = f"{self.location.render()}: " if self.location else ""
        text = f"{self.label}: {where}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return _inert(text)

    def __str__(self) -> str:
        where = f"{self.location.render()}: " if self.location else ""
        return f"{where}{self.message}"


class IntegrityError(ProvenanceError):
    """The ledger or evidence store does not match its own hashes or references."""

    exit_code = EXIT_INTEGRITY
    label = "integrity failure"


class LockedError(IntegrityError):
    """Another writer holds the ledger lock."""

    label = "ledger locked"


class NetworkError(ProvenanceError):
    """The network or the GitHub API failed (offline, rate limit, HTTP error).

    Messages must never contain a token; build them with ``redact``.
    """

    exit_code = EXIT_NETWORK
    label = "network error"


class WriteError(ProvenanceError):
    """A file could not be written: disk full, quota, read-only file system, no
    permission. Every writer is atomic, so nothing was half-written (the target is as it
    was and the temporary file is removed)."""

    exit_code = EXIT_WRITE
    label = "cannot write"

    @classmethod
    def from_os_error(cls, exc: OSError, path: str | Path | None = None) -> WriteError:
        """The error for ``exc`` raised while writing ``path`` (else the file it names)."""
        target = path if path is not None else exc.filename
        reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
        return cls(f"{target}: {reason}" if target is not None else reason)


class UnsafeInputError(InputError):
    """An input tried to escape its repository or use a forbidden construct."""

    label = "unsafe input"


class ProvenanceWarning(UserWarning):
    """Something the user should know, which does not stop the command (a stale index
    rebuilt in memory). The core emits it with :func:`warnings.warn`; ``cli.runner``
    prints each as one ``warning: …`` line on stderr, terminal-safe."""

    def diagnostic(self) -> str:
        return _inert(f"warning: {self}")
