"""Run one child process and measure it: wall, user and system CPU, peak RSS, load.

Each measurement is of one child alone (``os.wait4`` gives that child's own
resource usage), so the reference builder under node and ``provenance`` can be
run alternately in one benchmark run and compared on equal terms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measurement:
    """One child's cost: seconds of wall and CPU, peak RSS in MB, 1-minute load before it."""

    wall: float
    user: float
    sys: float
    rss_mb: float
    load: float
    returncode: int

    @property
    def cpu(self) -> float:
        return self.user + self.sys


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdout: Path | None = None,
    check: bool = True,
) -> Measurement:
    """Run ``argv`` to completion; its stdout goes to ``stdout`` (or /dev/null)."""
    load = os.getloadavg()[0]
    out_path = stdout or Path(os.devnull)
    with out_path.open("wb") as out:
        start = time.perf_counter()
        child = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        assert child.stderr is not None
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    if check and child.returncode not in (0, 1):
        raise RuntimeError(
            f"{' '.join(argv)} exited {child.returncode}:\n{err.decode(errors='replace')[-2000:]}"
        )
    return Measurement(
        wall=wall,
        user=usage.ru_utime,
        sys=usage.ru_stime,
        rss_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
        load=load,
        returncode=child.returncode,
    )


def median(values: Sequence[Measurement]) -> Measurement:
    """Field-wise median of repeated measurements."""
    return Measurement(
        wall=statistics.median(m.wall for m in values),
        user=statistics.median(m.user for m in values),
        sys=statistics.median(m.sys for m in values),
        rss_mb=max(m.rss_mb for m in values),
        load=statistics.median(m.load for m in values),
        returncode=max(m.returncode for m in values),
    )


def machine() -> str:
    """CPU model, core count and memory of this machine, one line."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores{memory}"
