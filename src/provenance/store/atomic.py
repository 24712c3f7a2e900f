"""Atomic, durable file writes: a reader sees the old file or the new one, never a mix.

The sequence (each step can fail or the process can be killed between any two):

1. create a hidden temporary file in the *same directory* as the target
   (``.<name>.<pid>.<random>.tmp``; same file system, so the rename is atomic);
2. write every byte, ``fsync`` the file, close it;
3. ``os.replace`` it over the target (atomic on POSIX);
4. ``fsync`` the directory so the rename itself survives a power loss.

A failure before step 3 removes the temporary file and leaves the target as
it was. A process killed before step 3 may leave a hidden ``*.tmp`` file
behind; readers never look at hidden files and ``provenance verify`` reports
leftovers as warnings.

A write the system refuses — disk full (``ENOSPC``, ``EDQUOT``), a read-only file
system (``EROFS``), no permission — is a :class:`~provenance.errors.WriteError`
naming the target (exit 6, one line), raised after the temporary file is removed;
never an ``OSError`` traceback.

A file the user names for an output (``--output``) goes through
:func:`output_binary_stream` / :func:`output_text_stream`: the same atomic replace for
a regular file or a new path, reached through a symbolic link as the shell's ``>``
would reach it; but a file that exists and is neither (``/dev/null``, ``/dev/stdout``,
a FIFO) is written in place, since replacing it would put a regular file where the
device or pipe was.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from provenance.errors import WRITE_ERRNOS, WriteError

#: Suffix of temporary files; readers skip hidden files ending with it.
TEMP_SUFFIX = ".tmp"


def is_temp_name(name: str) -> bool:
    """True for the name of a temporary file an interrupted write may leave behind."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _writer_alive(name: str) -> bool:
    """Whether the process that created temp file ``name`` may still be writing it."""
    parts = name.split(".")
    # .<target name>.<pid>.<random>.tmp -> [..., pid, random, "tmp"]
    try:
        pid = int(parts[-3])
    except (IndexError, ValueError):
        return True  # not ours: leave it alone
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temp_files(directory: Path) -> list[Path]:
    """Delete temp files under ``directory`` whose writer process no longer exists.

    Safe beside live writers: a temp file is only removed when the pid in its
    name is not a running process. Returns the files removed.
    """
    if not directory.is_dir():
        return []
    removed = []
    for path in sorted(directory.rglob(f".*{TEMP_SUFFIX}")):
        if path.is_file() and is_temp_name(path.name) and not _writer_alive(path.name):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


def fsync_directory(directory: Path) -> None:
    """Flush a directory entry change (create, rename) to disk."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_directory(directory: Path) -> None:
    """Create ``directory`` (and parents) durably: each new entry's parent is fsynced."""
    if directory.is_dir():
        return
    ensure_directory(directory.parent)
    try:
        directory.mkdir()
    except FileExistsError:
        if not directory.is_dir():
            raise
        return
    fsync_directory(directory.parent)


def _temp_for(path: Path) -> Path:
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


@contextlib.contextmanager
def atomic_binary_stream(path: Path) -> Iterator[BinaryIO]:
    """Stream bytes into ``path``: the target is replaced (atomically, durably) only when
    the block ends without an exception; otherwise it is left as it was. For outputs too
    large to hold twice in memory (a report of every recipe). The directory must exist."""
    temp = _temp_for(path)
    fd = _create(temp, path)
    in_block = True  # an OSError of the caller's block is ours only if a write was refused
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            in_block = False
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError) and (not in_block or exc.errno in WRITE_ERRNOS):
            raise WriteError.from_os_error(exc, path) from None
        raise
    _sync_directory(path)


def _create(temp: Path, target: Path) -> int:
    """A new temporary file for ``target``; WriteError naming the target if refused."""
    try:
        ensure_directory(target.parent)
        return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise WriteError.from_os_error(exc, target) from None


def _sync_directory(target: Path) -> None:
    try:
        fsync_directory(target.parent)
    except OSError as exc:
        raise WriteError.from_os_error(exc, target) from None


@contextlib.contextmanager
def atomic_text_stream(path: Path) -> Iterator[TextIO]:
    """:func:`atomic_binary_stream` for UTF-8 text."""
    with atomic_binary_stream(path) as handle, _utf8_text(handle) as text:
        yield text


@contextlib.contextmanager
def _utf8_text(handle: BinaryIO) -> Iterator[TextIO]:
    """UTF-8 text over ``handle``, flushed into it at the end and detached from it (the
    caller's block closes ``handle``)."""
    text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
    try:
        yield text
        text.flush()
    finally:
        text.detach()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (see the module docstring)."""
    temp = _temp_for(path)
    fd = _create(temp, path)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        temp.replace(path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if isinstance(exc, OSError):
            raise WriteError.from_os_error(exc, path) from None
        raise
    _sync_directory(path)


@contextlib.contextmanager
def output_binary_stream(path: Path) -> Iterator[BinaryIO]:
    """Stream a user-named output into ``path`` (see the module docstring): atomically
    for a regular file or a new path, in place for a device, FIFO or other special file."""
    try:
        mode: int | None = path.stat().st_mode
    except FileNotFoundError:
        mode = None  # a new path, or a symbolic link to one
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        try:
            device = path.open("wb")
        except OSError as exc:
            raise WriteError.from_os_error(exc, path) from None
        try:
            with device:
                yield device
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            raise WriteError.from_os_error(exc, path) from None
        return
    with atomic_binary_stream(path.resolve()) as handle:
        yield handle


@contextlib.contextmanager
def output_text_stream(path: Path) -> Iterator[TextIO]:
    """:func:`output_binary_stream` for UTF-8 text."""
    with output_binary_stream(path) as handle, _utf8_text(handle) as text:
        yield text
