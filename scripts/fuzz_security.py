"""Long security campaign: the suite's fuzz targets and SIGKILL loop, scaled up.

Runs ``tests/security/test_sec_fuzz.py`` with many more (random, not
derandomised) examples per target, ``tests/security/test_sec_fuzz_cli.py`` with
many more per CLI command, and ``tests/security/test_sec_crash.py`` with
many more kills, then prints the figures quoted in ``docs/security.md``:
fuzz inputs run per target (and how many were refused with a documented
error), SIGKILLs survived, records lost.

    python scripts/fuzz_security.py --examples 3000 --cli-examples 150 --kills 60
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pytest(target: str, env: dict[str, str]) -> tuple[int, str]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", target],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - started
    print(f"{target}: exit {proc.returncode} in {took:.0f}s", flush=True)
    return proc.returncode, proc.stdout + proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3000, help="examples per fuzz target")
    parser.add_argument("--kills", type=int, default=60, help="SIGKILL iterations")
    parser.add_argument("--cli-examples", type=int, default=150, help="examples per CLI command")
    args = parser.parse_args()
    failures = 0
    if args.examples:
        code, output = _pytest(
            "tests/security/test_sec_fuzz.py",
            {"PROVENANCE_FUZZ_EXAMPLES": str(args.examples), "PROVENANCE_FUZZ_RANDOM": "1"},
        )
        failures += code != 0
        counts = re.findall(r"^fuzz inputs run: (.*)$", output, re.M)
        print("fuzz inputs run:", counts[-1] if counts else "(none reported)")
        if code:
            print(output[-6000:])
    if args.cli_examples:
        code, output = _pytest(
            "tests/security/test_sec_fuzz_cli.py",
            {"PROVENANCE_FUZZ_CLI_EXAMPLES": str(args.cli_examples), "PROVENANCE_FUZZ_RANDOM": "1"},
        )
        failures += code != 0
        counts = re.findall(r"^CLI fuzz inputs run: (.*)$", output, re.M)
        print("CLI fuzz inputs run:", counts[-1] if counts else "(none reported)")
        if code:
            print(output[-6000:])
    if args.kills:
        code, output = _pytest(
            "tests/security/test_sec_crash.py",
            {"PROVENANCE_CRASH_ITERATIONS": str(args.kills)},
        )
        failures += code != 0
        figures = re.findall(r"^e2e crash safety: (.*)$", output, re.M)
        print("crash safety:", figures[-1] if figures else "(none reported)")
        if code:
            print(output[-6000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
