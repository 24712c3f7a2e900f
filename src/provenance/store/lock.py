"""The ledger writer lock: one writer at a time for the ledger and its evidence store.

An exclusive advisory lock (``fcntl.flock``) on ``<ledger_root>/.lock``. The
kernel releases it when the holder exits or is killed, so a crashed writer
never leaves the ledger locked. The holder writes its pid, host and start time
into the file so that a waiting writer can say who holds it.

Taking the lock also deletes temporary files left in the ledger by writers
that were killed mid-write. The lock is *not* re-entrant: take it once around
a whole write operation (ingest, add-sweep), and call the store and ledger
writers inside it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from provenance.errors import LockedError, WriteError
from provenance.store.atomic import ensure_directory, remove_stale_temp_files

LOCK_NAME = ".lock"
_POLL_SECONDS = 0.05


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 512).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


@contextlib.contextmanager
def writer_lock(ledger_root: Path, *, timeout: float = 10.0) -> Iterator[Path]:
    """Hold the exclusive writer lock of ``ledger_root`` for the ``with`` block.

    Waits up to ``timeout`` seconds (0 means try once), then raises
    :class:`~provenance.errors.LockedError` naming the holder when known.
    Yields the lock file's path.
    """
    lock_path = ledger_root / LOCK_NAME
    try:
        ensure_directory(ledger_root)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:  # a read-only or full ledger: nothing can be written there
        raise WriteError.from_os_error(exc, lock_path) from None
    try:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    holder = _holder(fd)
                    who = f" (held by {holder})" if holder else ""
                    raise LockedError(
                        f"another writer holds the ledger lock {lock_path}{who}; "
                        f"gave up after {timeout:g}s",
                        hint="wait for the other ingest or add-sweep to finish, then retry",
                    ) from None
                time.sleep(_POLL_SECONDS)
        # Temp files of writers that died mid-write are garbage now.
        remove_stale_temp_files(ledger_root)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} since={stamp}\n".encode())
        except OSError as exc:
            fcntl.flock(fd, fcntl.LOCK_UN)
            raise WriteError.from_os_error(exc, lock_path) from None
        try:
            yield lock_path
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
