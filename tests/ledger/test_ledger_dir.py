"""The ledger directory: stable YAML, round trips, merging, declarations, malformed files."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_factories import PR, make_entry, make_sweep
from ledger_workspace import Workspace

from provenance.errors import EXIT_INPUT, InputError
from provenance.model.ledger import (
    Declaration,
    Declarations,
    LedgerEntry,
    LedgerFile,
    PrRef,
    SelectionPattern,
)
from provenance.store.ledger import Ledger, merge_entries, render_entry

R1, R2, R3 = ("sha256:" + c * 64 for c in "123")


def test_write_and_read_entry(workspace: Workspace) -> None:
    ledger = workspace.ledger
    entry = make_entry((R1, R2), sweeps=(make_sweep(),), notes="first line\nsecond line")
    assert ledger.write_entry(entry)
    path = workspace.ledger_root / "prs" / "SemiAnalysisAI__InferenceX__2120.yaml"
    assert ledger.path_of(PR) == path
    assert ledger.entry(PR) == entry
    assert ledger.entries() == [entry]
    assert ledger.entry(PrRef(repo="a/b", number=1)) is None
    text = path.read_text()
    assert text.startswith("# provenance ledger entry: SemiAnalysisAI/InferenceX#2120")
    assert "schema: provenance.ledger.pr/v1\n" in text
    assert "merged_at: 2026-10-02\n" in text  # block style, unquoted dates
    assert "{" not in text
    assert "notes: |-\n  first line\n  second line\n" in text
    # key order follows the model, not the alphabet
    assert text.index("pr:") < text.index("title:") < text.index("records:") < text.index("sweeps:")


def test_write_entry_reports_unchanged(workspace: Workspace) -> None:
    entry = make_entry((R1,))
    assert workspace.ledger.write_entry(entry)
    mtime = workspace.ledger.path_of(PR).stat().st_mtime_ns
    assert not workspace.ledger.write_entry(entry)
    assert workspace.ledger.path_of(PR).stat().st_mtime_ns == mtime
    assert workspace.ledger.write_entry(make_entry((R1, R2)))


def test_merge_keeps_every_known_fact(workspace: Workspace) -> None:
    ledger = workspace.ledger
    by_hand = make_sweep(11, source="review-thread:https://example.invalid/1")
    ledger.write_entry(make_entry((R1, R2), sweeps=(by_hand,), notes="checked by hand"))
    new_file = LedgerFile(path="benchmarks/x.sh", blob_sha="d" * 40, commit="e" * 40)
    ingested = make_entry(
        (R2, R3),
        sweeps=(make_sweep(11, source="github-api"), make_sweep(12, source="github-api")),
        files=(new_file,),
        config_keys=("other-key",),
        title="new title",
    )
    assert ledger.merge_entry(ingested)
    merged = ledger.entry(PR)
    assert merged is not None
    assert merged.records == (R1, R2, R3)
    assert [s.run_id for s in merged.sweeps] == [11, 12]
    assert merged.sweeps[0].source.startswith("review-thread:")  # never replaced
    assert merged.config_keys == ("minimaxm3-fp4-b200-vllm", "other-key")
    assert new_file in merged.files and len(merged.files) == 2
    assert merged.title == "new title"
    assert merged.notes == "checked by hand"
    assert not ledger.merge_entry(ingested)  # idempotent


def test_merge_creates_missing_entry_and_refuses_other_pr(workspace: Workspace) -> None:
    assert workspace.ledger.merge_entry(make_entry((R1,)))
    assert workspace.ledger.entry(PR) == make_entry((R1,))
    with pytest.raises(ValueError, match="different PRs"):
        merge_entries(make_entry(()), make_entry((), pr=PrRef(repo="a/b", number=2)))


def test_declarations_round_trip(workspace: Workspace) -> None:
    ledger = workspace.ledger
    assert ledger.declarations() == Declarations()
    declarations = Declarations(
        declarations=(
            Declaration(
                id="mtp-pd",
                match=SelectionPattern(
                    recipe="MiniMaxAI/MiniMax-M3",
                    strategy="pd_cluster",
                    reasons=("value-mismatch",),
                ),
                reason="EAGLE3 on prefill is not benchmarked; documented in the guide",
                date=dt.date(2026, 11, 2),
                by="reviewer",
            ),
        )
    )
    assert ledger.write_declarations(declarations)
    assert not ledger.write_declarations(declarations)
    assert ledger.declarations() == declarations


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _entry_text(workspace: Workspace) -> str:
    workspace.ledger.write_entry(make_entry((R1,), sweeps=(make_sweep(),)))
    return workspace.ledger.path_of(PR).read_text()


@pytest.mark.parametrize(
    ("edit", "message", "needle", "key_path"),
    [
        (("run_id: 19000001", "run_id: not-a-number"), "integer", "run_id:", "sweeps[0].run_id"),
        (("  number: 2120", "  number: [2120]"), "integer", "number:", "pr.number"),
        (("conclusion: success", "conclusion: green"), "success", "conclusion:", None),
        (("title:", "titel:"), "unknown key", "titel:", "titel"),
        (
            ("merged_at: 2026-10-02", "merged_at: 2026-10-02\nmerged_at: 2026-10-03"),
            "duplicate",
            "merged_at: 2026-10-03",
            "merged_at",
        ),
        (
            ("schema: provenance.ledger.pr/v1", "schema: provenance.ledger.pr/v9"),
            "unsupported",
            "schema:",
            "schema",
        ),
        (("- sha256:", "- !!python/object:os.system sha256:"), "tag not allowed", "!!python", None),
    ],
)
def test_malformed_entry_is_input_error_with_location(
    workspace: Workspace, edit: tuple[str, str], message: str, needle: str, key_path: str | None
) -> None:
    text = _entry_text(workspace)
    assert edit[0] in text
    path = workspace.ledger.path_of(PR)
    edited = text.replace(edit[0], edit[1], 1)
    path.write_text(edited)
    line = next(i for i, row in enumerate(edited.splitlines(), 1) if needle in row)
    with pytest.raises(InputError) as caught:
        workspace.ledger.entries()
    error = caught.value
    assert error.exit_code == EXIT_INPUT
    assert message in error.message
    assert error.location is not None
    assert error.location.path == str(path)
    assert error.location.line == line
    if key_path is not None:
        assert error.location.key_path == key_path


def test_entry_in_the_wrong_file_is_refused(workspace: Workspace) -> None:
    text = _entry_text(workspace)
    _write(workspace.ledger_root / "prs" / "SemiAnalysisAI__InferenceX__1.yaml", text)
    workspace.ledger.path_of(PR).unlink()
    with pytest.raises(InputError, match="file name does not match"):
        workspace.ledger.entries()


def test_non_mapping_entry_is_refused(workspace: Workspace) -> None:
    _write(workspace.ledger.path_of(PR), "- just\n- a list\n")
    with pytest.raises(InputError, match="must be a YAML mapping"):
        workspace.ledger.entries()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "declarations:\n- id: a\n  match: {}\n  reason: r\n  date: 2026-01-01\n"
            "- id: a\n  match: {}\n  reason: r\n  date: 2026-01-01\n",
            "duplicate declaration id",
        ),
        (
            "declarations:\n- id: a\n  match: {reasons: [made-up]}\n"
            "  reason: r\n  date: 2026-01-01\n",
            "unknown reason code",
        ),
        ("declarations:\n- id: a\n  match: {}\n  reason: r\n", "required key is missing"),
        ("schema: provenance.ledger.declarations/v2\n", "unsupported declarations schema"),
    ],
)
def test_bad_declarations(workspace: Workspace, text: str, message: str) -> None:
    _write(workspace.ledger.declarations_path, text)
    with pytest.raises(InputError, match=message) as caught:
        workspace.ledger.declarations()
    assert caught.value.location is not None and caught.value.location.line is not None


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=int(os.environ.get("PROVENANCE_FUZZ_EXAMPLES", "150")), deadline=None)
@given(
    title=_text, notes=_text, source=_text, head=st.from_regex(r"[0-9a-f]{7,40}", fullmatch=True)
)
def test_any_text_round_trips(title: str, notes: str, source: str, head: str) -> None:
    entry = LedgerEntry(
        pr=PR,
        title=title,
        notes=notes,
        merge_commit=head,
        sweeps=(make_sweep().model_copy(update={"source": source or "x", "head_sha": head}),),
    )
    from provenance.safe_yaml import load_yaml_bytes, parse_model

    loaded = load_yaml_bytes(render_entry(entry), "entry.yaml")
    assert parse_model(LedgerEntry, loaded) == entry


def test_missing_ledger_is_empty(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "nowhere")
    assert ledger.entries() == []
    assert ledger.declarations() == Declarations()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"a: &a [x, x, x, x, x, x, x, x, x]\n"
            + b"".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n".encode()
                for i in range(9)
            ),
            "alias",
        ),
        (b"schema: provenance.ledger.pr/v1\ntitle: \xff\xfe broken\n", "UTF-8"),
        (b"\xef\xbb\xbf" + b"[" * 200 + b"]" * 200, "nesting"),
        (b"pr: !!python/object/apply:os.system ['touch /tmp/pwned']\n", "tag not allowed"),
        (b"pr: {repo: a/b, number: 1\n", "invalid YAML"),
    ],
)
def test_hostile_entry_files_are_refused(
    workspace: Workspace, content: bytes, message: str
) -> None:
    path = workspace.ledger.path_of(PR)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as caught:
        workspace.ledger.entries()
    assert caught.value.location is not None
    assert caught.value.location.path == str(path)
