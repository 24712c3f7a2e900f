"""The writer lock: exclusive, waits up to a timeout, names its holder, released on exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from provenance.errors import EXIT_INTEGRITY, LockedError
from provenance.store.lock import LOCK_NAME, writer_lock


def test_lock_is_exclusive_and_names_the_holder(tmp_path: Path) -> None:
    with writer_lock(tmp_path):
        assert f"pid={os.getpid()}" in (tmp_path / LOCK_NAME).read_text()
        with pytest.raises(LockedError) as caught, writer_lock(tmp_path, timeout=0.1):
            pass
    assert f"pid={os.getpid()}" in caught.value.message
    assert caught.value.exit_code == EXIT_INTEGRITY
    with writer_lock(tmp_path, timeout=0):  # released
        pass


def test_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with writer_lock(tmp_path):
            order.append("first-in")
            held.set()
            time.sleep(0.3)
            order.append("first-out")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait(5)
    with writer_lock(tmp_path, timeout=10):
        order.append("second-in")
    thread.join()
    assert order == ["first-in", "first-out", "second-in"]


def test_lock_of_a_killed_holder_is_released(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from provenance.store.lock import writer_lock
        with writer_lock(Path({str(tmp_path)!r})):
            print("held", flush=True)
            time.sleep(60)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        with (
            pytest.raises(LockedError, match=f"pid={child.pid}"),
            writer_lock(tmp_path, timeout=0.1),
        ):
            pass
    finally:
        child.kill()
        child.wait()
    with writer_lock(tmp_path, timeout=5):
        pass
