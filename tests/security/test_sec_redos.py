"""Regular-expression denial of service: globs from InferenceX files must match in linear time.

``perf-changelog.yaml`` (written by InferenceX PR authors) lists config-key
globs that ingest matches against every config key. A glob compiled naively
to ``.*`` per ``*`` backtracks exponentially: ``*a`` repeated 25 times plus
``b`` against a 30-character key took 23 s (measured); a few more stars and
an ingest never ends.

No time is measured (the machine is shared): the check counts the Python lines the
matcher executes, which is deterministic, and requires that doubling the glob and the
key at most quadruples them (the two-pointer matcher is O(len(glob) · len(key)) at
worst; the backtracking regex doubles per star). It runs in a child process whose
timeout only guards against a hang (a regex in C would not show in the count).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHECK = textwrap.dedent(
    """
    import sys
    from provenance.evidence.inferencex.changelog import key_glob_matches

    def lines(pattern, key, expected):
        count = 0

        def trace(frame, event, arg):
            nonlocal count
            if event == "line":
                count += 1
            return trace

        sys.settrace(trace)
        try:
            found = key_glob_matches(pattern, key)
        finally:
            sys.settrace(None)
        assert found is expected, (pattern, key)
        return count

    prefix = "minimaxm3-fp4-b300-dynamo-vllm-mtp-"
    small = lines("*a" * 20 + "b", prefix + "a" * 15, False)
    large = lines("*a" * 40 + "b", prefix + "a" * 30, False)
    assert key_glob_matches("*a" * 20 + "*", prefix + "a" * 30)
    assert key_glob_matches("minimaxm3-*-b300-*", prefix + "a" * 30)
    print(small, large)
    """
)


def test_changelog_globs_match_in_linear_time() -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("an 81-character changelog glob did not match a 65-character key (a hang)")
    assert result.returncode == 0, result.stderr
    small, large = (int(word) for word in result.stdout.split())
    # Quadratic at most: doubling both sizes at most quadruples the work
    # (measured: 358 -> 493 lines).
    assert 0 < large <= 4 * small, (small, large)
