"""Hostile launchers: nothing in a script ever runs, and bad input fails cleanly.

The canary scripts would create a file, delete one, or open a socket if any
part of them were executed (directly, in a command substitution, in backticks,
through ``eval``, ``source``, a redirection or a function). After evaluation
the canary file must not exist and the victim file must still be there;
pytest-socket is on for the whole suite, so a socket attempt would also fail.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from provenance.errors import InputError
from provenance.evidence.bash import Limits, evaluate_launcher

PATH = "benchmarks/single_node/fixed_seq_len/hostile.sh"


def canary_script(canary: Path, victim: Path) -> str:
    return f"""#!/usr/bin/env bash
touch {canary}
echo pwned > {canary}
X=$(touch {canary}; echo x)
Y=`touch {canary}`
eval "touch {canary}"
source {canary}
. /etc/profile
rm -f {victim}
curl -s http://127.0.0.1:9/ -o {canary}
python3 -c 'import socket; socket.create_connection(("127.0.0.1", 9))' > {canary}
exec 3>/dev/tcp/127.0.0.1/9
cat > {canary} <<EOF
written by a heredoc
EOF
boom() {{ touch {canary}; }}
boom
( touch {canary} ) &
touch {canary} | tee {canary}
vllm serve "$MODEL" --served-model-name "$(touch {canary}; echo name)" > {canary} 2>&1 &
"""


def test_canary_nothing_runs(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    result = evaluate_launcher(canary_script(canary, victim), PATH, {"MODEL": "m"})
    assert not canary.exists()
    assert victim.read_text() == "keep me"
    assert result.served
    assert result.argv == [
        "vllm",
        "serve",
        "m",
        "--served-model-name",
        "<unevaluated:command-substitution>",
    ]
    constructs = {m.construct_name for m in result.partial}
    assert {"eval", "source", "command-substitution"} <= constructs


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sockets_are_disabled_for_this_suite() -> None:
    # Proves the canary above would have been caught had it opened a socket.
    with pytest.raises(Exception, match=r"[Ss]ocket"):
        socket.create_connection(("192.0.2.1", 9), timeout=0.1)


def test_unparsable_script_is_an_input_error_with_line() -> None:
    with pytest.raises(InputError) as info:
        evaluate_launcher("X=1\nif [ x ]; then\n  echo\n", PATH, {})
    assert info.value.location is not None
    assert info.value.location.path == PATH
    assert info.value.location.line is not None


def test_nul_byte_is_refused() -> None:
    with pytest.raises(InputError, match="NUL"):
        evaluate_launcher("X=1\x00\nvllm serve m\n", PATH, {})


def test_oversized_script_is_refused() -> None:
    with pytest.raises(InputError, match="limit"):
        evaluate_launcher("X=1\n" * 200_000, PATH, {})


def test_deep_nesting_is_refused() -> None:
    script = "if true; then\n" * 300 + "X=1\n" + "fi\n" * 300
    with pytest.raises(InputError, match="nests"):
        evaluate_launcher(script, PATH, {})


def test_exponential_value_growth_is_bounded() -> None:
    script = "X=ab\n" + 'X="$X$X"\n' * 64 + "vllm serve $X\n"
    with pytest.raises(InputError, match="characters") as info:
        evaluate_launcher(script, PATH, {})
    assert info.value.location is not None and info.value.location.line is not None


def test_infinite_loop_is_bounded() -> None:
    with pytest.raises(InputError, match="iterations") as info:
        evaluate_launcher("while true; do X=1; done\nvllm serve m\n", PATH, {})
    assert info.value.location is not None and info.value.location.line == 1


def test_unbounded_recursion_is_bounded() -> None:
    with pytest.raises(InputError, match="nest"):
        evaluate_launcher("f() { f; }\nf\nvllm serve m\n", PATH, {})


def test_exponential_function_fan_out_hits_the_step_budget() -> None:
    lines = ["f0() { X=1; }"]
    for i in range(1, 22):
        lines.append(f"f{i}() {{ f{i - 1}; f{i - 1}; }}")
    lines.append("f21\nvllm serve m")
    with pytest.raises(InputError, match="steps"):
        evaluate_launcher("\n".join(lines), PATH, {}, limits=Limits(max_steps=50_000))


def test_huge_brace_and_loop_ranges_are_not_expanded() -> None:
    script = "for i in {1..100000000}; do X=$i; done\nvllm serve m {1..99999999}\n"
    result = evaluate_launcher(script, PATH, {})
    assert result.argv == ["vllm", "serve", "m", "<unevaluated:brace-expansion>"]


@pytest.mark.parametrize("script", ["{\U000c8af2", "x=a{\U000e0000}", "echo {1..2\U0010ffff}"])
def test_parser_crashing_characters_are_refused_before_parsing(script: str) -> None:
    # tree-sitter-bash calls C isdigit() on these; evaluating them must not crash.
    with pytest.raises(InputError, match="right after"):
        evaluate_launcher(script, PATH, {})


def test_non_latin_text_elsewhere_is_fine() -> None:
    script = 'echo "✓ {é} 🚀"  # ≥ — ok\nvllm serve "m🚀"\n'
    assert evaluate_launcher(script, PATH, {}).argv == ["vllm", "serve", "m🚀"]


def test_lone_surrogate_is_an_input_error() -> None:
    with pytest.raises(InputError, match="Unicode"):
        evaluate_launcher("X=\ud800\nvllm serve m\n", PATH, {})
