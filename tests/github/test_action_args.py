"""The Action's extra audit arguments: shell words, variables from the environment,
nothing executed; and the words reach ``provenance audit`` intact through bash."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.errors import UsageError
from provenance.github.action import action_arguments, split_words

#: words without ``$`` (a ``$`` would be a variable reference after quoting too)
WORDS = st.lists(
    st.text(st.characters(exclude_characters="$\0", exclude_categories=["Cs"]), min_size=1),
    max_size=6,
)


@given(WORDS)
def test_quoted_words_come_back_as_they_were(words: list[str]) -> None:
    assert split_words(" ".join(shlex.quote(w) for w in words), {}) == tuple(words)


@given(WORDS)
def test_newlines_separate_words_like_spaces(words: list[str]) -> None:
    text = "\n".join(shlex.quote(w) for w in words)
    assert split_words(text, {}) == tuple(words)


def test_a_path_with_variables_and_spaces_is_one_word() -> None:
    env = {"RUNNER_TEMP": "/home/runner/work/_temp", "NAME": "my ledger"}
    assert split_words('--kv all --ledger "$RUNNER_TEMP/${NAME}"', env) == (
        "--kv",
        "all",
        "--ledger",
        "/home/runner/work/_temp/my ledger",
    )


def test_nothing_is_executed_or_globbed() -> None:
    text = "$(touch /tmp/x) `id` * ~/ledger"
    assert split_words(text, {}) == ("$(touch", "/tmp/x)", "`id`", "*", "~/ledger")


def test_an_unset_variable_and_unbalanced_quotes_are_usage_errors() -> None:
    with pytest.raises(UsageError, match=r"\$MISSING is not set"):
        split_words("--ledger $MISSING/ledger", {})
    with pytest.raises(UsageError, match="extra-args: No closing quotation"):
        split_words('--ledger "open', {})


def test_ledger_and_evidence_inputs_come_first() -> None:
    env = {
        "INPUT_LEDGER": "$GITHUB_WORKSPACE/my ledger",
        "INPUT_EVIDENCE": "ev",
        "EXTRA_ARGS": "--kv all",
        "GITHUB_WORKSPACE": "/w",
    }
    assert action_arguments(env) == (
        "--ledger",
        "/w/my ledger",
        "--evidence",
        "ev",
        "--kv",
        "all",
    )
    assert action_arguments({}) == ()


def test_bash_reads_the_words_back_intact(tmp_path: object) -> None:
    """The Action's two halves: the module writes NUL-terminated words, ``mapfile -d ''``
    reads them into an array, each word one argument."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not available")
    script = (
        f'"{sys.executable}" -m provenance.cli.action_args > "$ARGS_FILE"\n'
        "mapfile -d '' -t extra < \"$ARGS_FILE\"\n"
        'printf "<%s>\\n" "${extra[@]}"\n'
    )
    args_file = f"{tmp_path}/args"
    done = subprocess.run(
        [bash, "-eo", "pipefail", "-c", script],
        env={
            "ARGS_FILE": args_file,
            "EXTRA_ARGS": "--kv all --ledger \"$T/a b\" 'x y'",
            "T": "/tmp/with space",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "<--kv>",
        "<all>",
        "<--ledger>",
        "</tmp/with space/a b>",
        "<x y>",
    ]
    bad = subprocess.run(
        [bash, "-eo", "pipefail", "-c", script],
        env={"ARGS_FILE": args_file, "EXTRA_ARGS": "$NOPE", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "$NOPE is not set" in bad.stderr
    assert "Traceback" not in bad.stderr
