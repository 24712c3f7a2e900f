"""The text audit is readable at any width (issue #31): at 80 columns the groups are
stacked blocks instead of a table whose reasons column is 7 cells wide, no header is
cut, no line is wider than the width, and no count is parted from its label; a pipe is
laid out for 80 columns unless ``COLUMNS`` says otherwise."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit
from provenance.audit.verdicts import AuditReport
from provenance.report import text
from provenance.report.width import PIPE_WIDTH, resolve_width, units, wrap, wrap_text

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def minimax() -> AuditReport:
    """The embedded MiniMax-M3 audit (every hardware: wide and narrow groups alike)."""
    return run_audit(
        AuditInputs(
            recipes=("MiniMaxAI/MiniMax-M3",),
            recipes_root=PROJECT / "recipes",
            ledger=PROJECT / "ledger",
            evidence=PROJECT / "evidence",
        ),
        AuditFilters(features="default"),
    )


def _render(report: AuditReport, width: int) -> list[str]:
    out = io.StringIO()
    text.write(report, out, width=width)
    return out.getvalue().splitlines()


#: a word rich cut short (``hardwa…``): our own cuts start a phrase with ``… N more``
CUT_WORD = re.compile(r"\w…")


@pytest.mark.parametrize("width", [60, 80, 100, 120, 160])
def test_no_line_is_wider_than_the_width_and_no_header_is_cut(
    minimax: AuditReport, width: int
) -> None:
    lines = _render(minimax, width)
    assert max(cell_len(line) for line in lines) <= width
    assert not [line for line in lines if CUT_WORD.search(line)]


@pytest.mark.parametrize("width", [60, 80, 120, 160])
def test_a_count_never_leaves_its_label(minimax: AuditReport, width: int) -> None:
    lines = _render(minimax, width)
    for code, count in minimax.summary.by_reason.items():
        assert any(f"{code} {count}" in line for line in lines), (code, count)
    summary = minimax.summary
    assert any(f"{summary.combinations} combinations:" in line for line in lines)
    assert any(f"{summary.undeclared_guide_only} undeclared)" in line for line in lines)
    # no line starts with the count that closes a label of the line before (``16,``)
    assert not [line for line in lines if re.match(r"\s*\d+([,)]|$)", line)]


def test_narrow_terminals_get_one_block_per_group(minimax: AuditReport) -> None:
    narrow = _render(minimax, 80)
    wide = _render(minimax, 160)
    head = re.compile(
        r"  \S+ · \S+ · \S+  combos \d+, recommended \d+, guide-only \d+(, declared \d+)?"
    )
    assert sum(bool(head.fullmatch(line)) for line in narrow) >= 5
    assert not any(line.lstrip().startswith("variant   hardware") for line in narrow)
    assert any(line.lstrip().startswith("variant   hardware   strategy") for line in wide)
    # stacking costs a little, not the 6-fold growth of a 7-cell reasons column
    assert len(narrow) < 1.3 * len(wide)
    # every group of the wide table is a block of the narrow output
    for line in wide:
        match = re.match(r"  (\w+)\s+(\w+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+   \S", line)
        if match:
            variant, hardware, strategy, combos, recommended, guide = match.groups()
            block = (
                f"  {variant} · {hardware} · {strategy}  combos {combos}, "
                f"recommended {recommended}, guide-only {guide}"
            )
            assert any(n.startswith(block) for n in narrow), block


def test_a_pipe_is_80_columns_unless_columns_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert resolve_width(io.StringIO()) == PIPE_WIDTH == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert resolve_width(io.StringIO()) == 132
    assert resolve_width(io.StringIO(), 100) == 100
    monkeypatch.setenv("COLUMNS", "not-a-number")
    assert resolve_width(io.StringIO()) == 80


def test_piped_report_fits_80_columns(
    minimax: AuditReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    text.write(minimax, out)
    assert max(cell_len(line) for line in out.getvalue().splitlines()) <= 80


def test_units_glue_a_number_to_the_label_it_counts() -> None:
    assert units("no-evidence 48024, topology-mismatch 16") == [
        "no-evidence 48024,",
        "topology-mismatch 16",
    ]
    assert units("71208 guide-only (0 declared, 71208 undeclared)") == [
        "71208 guide-only",
        "(0 declared,",
        "71208 undeclared)",
    ]
    assert units("a pool uses 1-16 whole nodes of 8 GPUs") == [
        "a",
        "pool",
        "uses",
        "1-16 whole",
        "nodes",
        "of",
        "8 GPUs",
    ]
    assert units("flag-unevidenced serve x=data (24)") == [
        "flag-unevidenced",
        "serve",
        "x=data (24)",
    ]


def test_wrap_indents_folds_what_cannot_fit_and_keeps_every_character() -> None:
    lines = wrap(["alpha", "beta", "gamma", "x" * 30], 14, "  ", "    ")
    assert lines == [
        "  alpha beta",
        "    gamma",
        "    xxxxxxxxxx",
        "    xxxxxxxxxx",
        "    xxxxxxxxxx",
    ]
    assert all(cell_len(line) <= 14 for line in lines)
    words = "the quick brown fox 12 jumps over 3 lazy dogs (4)"
    wrapped = wrap_text(words, 12)
    assert " ".join(line.strip() for line in wrapped) == words
    assert all(cell_len(line) <= 12 for line in wrapped)
