"""The Action's extra audit arguments: shell words, variables from the environment,
nothing executed; and the words reach ``provenance audit`` intact through bash."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.errors import UsageError
from provenance.github.action import action_arguments, sarif_copy_path, split_words

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


def test_ledger_and_evidence_inputs_come_first_made_absolute_against_the_checkout() -> None:
    """The audit runs outside the checkout: a relative ``ledger``/``evidence`` is made
    absolute against ``$REPO`` (the checkout), an absolute one is kept."""
    env = {
        "INPUT_LEDGER": "$GITHUB_WORKSPACE/my ledger",
        "INPUT_EVIDENCE": "ev",
        "EXTRA_ARGS": "--kv all",
        "GITHUB_WORKSPACE": "/w",
        "REPO": "/w/recipes",
    }
    assert action_arguments(env) == (
        "--ledger",
        "/w/my ledger",
        "--evidence",
        "/w/recipes/ev",
        "--kv",
        "all",
    )
    assert action_arguments({}) == ()
    with pytest.raises(UsageError, match=r"evidence: a relative path needs \$REPO"):
        action_arguments({"INPUT_EVIDENCE": "ev"})


def _workspace(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A workspace holding the checkout ``recipes/`` with a committed file link
    ``linked.sarif`` and directory link ``out/``, both pointing outside."""
    workspace, outside = tmp_path / "w", tmp_path / "outside"
    repo = workspace / "recipes"
    (repo / "reports").mkdir(parents=True)
    outside.mkdir()
    (outside / "precious").write_text("x")
    (repo / "linked.sarif").symlink_to(outside / "precious")
    (repo / "out").symlink_to(outside, target_is_directory=True)
    (repo / "a-dir").mkdir()
    return repo, outside, {"GITHUB_WORKSPACE": str(workspace), "REPO": str(repo)}


def test_a_sarif_copy_is_a_report_of_the_same_audit(tmp_path: Path) -> None:
    repo, _, env = _workspace(tmp_path)
    env["INPUT_SARIF_FILE"] = "reports/provenance.sarif"
    assert action_arguments(env) == ("--report", f"sarif={repo / 'reports/provenance.sarif'}")
    assert sarif_copy_path("$RUNNER_TEMP/x.sarif", {**env, "RUNNER_TEMP": "/t"}) == Path(
        "/t/x.sarif"
    )


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ("linked.sarif", "linked.sarif is a symbolic link"),
        ("out/x.sarif", "out is a symbolic link"),
        ("out/sub/x.sarif", "out is a symbolic link"),
        ("reports/../linked.sarif", "contains '..'"),
        ("a-dir", "exists and is not a regular file"),
        ("$GITHUB_WORKSPACE/recipes/out/x.sarif", "out is a symbolic link"),
    ],
)
def test_a_sarif_copy_through_a_link_in_the_checkout_is_refused(
    tmp_path: Path, given: str, refusal: str
) -> None:
    _, outside, env = _workspace(tmp_path)
    with pytest.raises(UsageError, match=re.escape(refusal)):
        sarif_copy_path(given, env)
    with pytest.raises(UsageError):
        action_arguments({**env, "INPUT_SARIF_FILE": given})
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]


def test_a_link_outside_the_workspace_is_refused_too(tmp_path: Path) -> None:
    _, outside, env = _workspace(tmp_path)
    link = tmp_path / "elsewhere.sarif"
    link.symlink_to(outside / "precious")
    with pytest.raises(UsageError, match="is a symbolic link"):
        sarif_copy_path(str(link), env)


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
