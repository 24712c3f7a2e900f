"""Regular-expression denial of service: globs from InferenceX files must match in linear time.

``perf-changelog.yaml`` (written by InferenceX PR authors) lists config-key
globs that ingest matches against every config key. A glob compiled naively
to ``.*`` per ``*`` backtracks exponentially: ``*a`` repeated 25 times plus
``b`` against a 30-character key took 23 s (measured); a few more stars and
an ingest never ends. The check runs in a child process with a timeout, so a
regression costs the suite seconds, not hours.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHECK = textwrap.dedent(
    """
    from provenance.evidence.inferencex.linkage import key_glob_matches
    key = "minimaxm3-fp4-b300-dynamo-vllm-mtp-" + "a" * 30
    pattern = "*a" * 40 + "b"
    assert not key_glob_matches(pattern, key)
    assert key_glob_matches("*a" * 20 + "*", key)
    assert key_glob_matches("minimaxm3-*-b300-*", key)
    print("ok")
    """
)


def test_changelog_globs_match_in_linear_time() -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=6, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a 81-character changelog glob did not match a 65-character key in 6 s")
    assert result.stdout.strip() == "ok", result.stderr
