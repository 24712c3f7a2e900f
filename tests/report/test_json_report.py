"""The streamed JSON report is ``model_dump_json`` byte for byte.

:mod:`provenance.report.json_report` writes each shared part of the verdict entries
once and joins the texts in the model's field order. These tests compare its output
with pydantic's serialisation of the whole report: on hypothesis-built reports whose
entries share parts (the same objects, as the audit builds them) and carry hostile
text, and on the embedded MiniMax-M3 audit.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.audit.index import EvidenceIndex
from provenance.audit.normaliser import PolicyNormaliser
from provenance.audit.pipeline import (
    AuditFilters,
    AuditInputs,
    ResolvedInputs,
    audit,
    default_inputs,
    load_graph,
    recipe_inputs,
)
from provenance.audit.verdicts import (
    RECORD_INDEX,
    AuditReport,
    AuditSummary,
    Claim,
    EvidenceRef,
    FeatureChoice,
    FlagProvenance,
    NearestEvidence,
    PdPools,
    Reason,
    RecordSummary,
    ReverseEntry,
    RoleFlags,
    SelectionSet,
    VerdictEntry,
)
from provenance.model.combination import PdPool
from provenance.model.ledger import Declarations
from provenance.model.reasons import ReasonCode, VerdictKind
from provenance.report import json_report


def streamed(report: AuditReport) -> str:
    out = io.StringIO()
    json_report.write(report, out)
    return out.getvalue()


def model_json(report: AuditReport) -> str:
    return report.model_dump_json(by_alias=True, context={RECORD_INDEX: report.record_index()})


# Hypothesis-built reports ---------------------------------------------------------

#: any text, control characters, quotes, backslashes and non-ASCII included
TEXT = st.text(max_size=6)
SHORT = st.text(alphabet='ab"\\\x00\x1fé\u2028😀', max_size=3)
MAYBE_TEXT = st.none() | SHORT
MAYBE_INT = st.none() | st.integers(min_value=-2, max_value=2**40)


def tuples(
    elements: st.SearchStrategy[Any], max_size: int = 3
) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(elements, max_size=max_size).map(tuple)


@st.composite
def reports(draw: st.DrawFn) -> AuditReport:
    record_ids = draw(st.lists(SHORT, min_size=1, max_size=4, unique=True))
    records = tuple(
        RecordSummary(record=r, config_key=draw(SHORT), prs=draw(tuples(SHORT))) for r in record_ids
    )
    refs = st.builds(EvidenceRef, record=st.sampled_from(record_ids), prs=tuples(SHORT))
    # pools of parts: entries draw the same objects from them, as the audit shares them
    flags = draw(
        st.lists(
            st.builds(FlagProvenance, key=SHORT, value=TEXT, cls=SHORT, evidence=tuples(refs)),
            min_size=1,
            max_size=4,
        )
    )
    roles = draw(
        st.lists(
            st.builds(
                RoleFlags,
                role=SHORT,
                node_rank=MAYBE_INT,
                flags=tuples(st.sampled_from(flags)),
            ),
            min_size=1,
            max_size=4,
        )
    )
    reasons = draw(
        st.lists(
            st.builds(
                Reason,
                code=st.sampled_from(ReasonCode),
                role=MAYBE_TEXT,
                flag=MAYBE_TEXT,
                recipe_value=MAYBE_TEXT,
                evidence_value=MAYBE_TEXT,
                sources=tuples(SHORT),
                detail=TEXT,
            ),
            min_size=1,
            max_size=4,
        )
    )
    nearest = draw(
        st.lists(
            tuples(
                st.builds(
                    NearestEvidence,
                    record=SHORT,
                    config_key=SHORT,
                    prs=tuples(SHORT),
                    role=MAYBE_TEXT,
                    distance=st.integers(min_value=0, max_value=9),
                    only_recipe=st.dictionaries(SHORT, SHORT, max_size=2),
                    only_evidence=st.dictionaries(SHORT, SHORT, max_size=2),
                    changed=st.dictionaries(SHORT, st.tuples(SHORT, SHORT), max_size=2),
                ),
                max_size=2,
            ),
            min_size=1,
            max_size=3,
        )
    )
    choices = st.builds(
        FeatureChoice,
        features=tuples(SHORT),
        feature_modes=st.dictionaries(SHORT, MAYBE_TEXT, max_size=2),
    )
    feature_tuples = draw(st.lists(tuples(choices, max_size=4), min_size=1, max_size=3))
    pools = draw(
        st.lists(
            st.builds(PdPool, nodes=st.integers(min_value=0, max_value=9), parallelism=SHORT),
            min_size=1,
            max_size=3,
        )
    )
    pd = st.builds(
        PdPools,
        prefill=tuples(st.sampled_from(pools)),
        decode=tuples(st.sampled_from(pools)),
    )
    selection_sets = st.builds(
        SelectionSet,
        variant=SHORT,
        hardware=SHORT,
        strategy=MAYBE_TEXT,
        node_count=MAYBE_INT,
        kv_offload=MAYBE_TEXT,
        kv_instances=MAYBE_INT,
        omni_task=MAYBE_TEXT,
        features=st.sampled_from(feature_tuples),
        pd=st.none() | pd,
    )
    entries = st.builds(
        VerdictEntry,
        recipe=SHORT,
        combinations=st.integers(min_value=0, max_value=2**40),
        selections=tuples(selection_sets),
        verdict=st.sampled_from(VerdictKind),
        roles=tuples(st.sampled_from(roles)),
        reasons=tuples(st.sampled_from(reasons)),
        nearest=st.sampled_from(nearest),
        evidence=tuples(refs),
        declared_by=MAYBE_TEXT,
    )
    return AuditReport(
        tool_version=draw(SHORT),
        recipes=draw(tuples(SHORT)),
        recipe_files=draw(st.dictionaries(SHORT, SHORT, max_size=2)),
        recipe_texts=draw(st.dictionaries(SHORT, SHORT, max_size=2)),
        ledger=draw(MAYBE_TEXT),
        offline=draw(st.booleans()),
        notices=draw(tuples(TEXT)),
        summary=AuditSummary(
            combinations=1,
            recommended=0,
            guide_only=1,
            declared=0,
            undeclared_guide_only=1,
            by_reason=draw(st.dictionaries(SHORT, st.integers(min_value=0, max_value=9))),
        ),
        records=records,
        verdicts=draw(tuples(entries, max_size=12)),
        reverse=draw(
            tuples(
                st.builds(
                    ReverseEntry,
                    record=SHORT,
                    config_key=SHORT,
                    prs=tuples(SHORT),
                    status=st.sampled_from(["reproduced", "not-expressible", "not-reproduced"]),
                    combinations=st.integers(min_value=0, max_value=9),
                    why=TEXT,
                )
            )
        ),
        claims=draw(
            tuples(
                st.builds(
                    Claim,
                    recipe=SHORT,
                    hardware=SHORT,
                    claim=SHORT,
                    recommended=st.integers(min_value=0, max_value=9),
                    detail=TEXT,
                )
            )
        ),
    )


@settings(max_examples=80, deadline=None)
@given(reports())
@pytest.mark.slow
def test_stream_is_model_dump_json_byte_for_byte(report: AuditReport) -> None:
    assert streamed(report) == model_json(report) + "\n"


def test_stream_with_no_verdicts_and_many_entries() -> None:
    """Empty tables, and more entries than one ``write`` joins (the chunk boundaries)."""
    summary = AuditSummary(
        combinations=0, recommended=0, guide_only=0, declared=0, undeclared_guide_only=0
    )
    empty = AuditReport(tool_version="0", recipes=(), summary=summary, verdicts=())
    assert streamed(empty) == model_json(empty) + "\n"
    role = RoleFlags(role="serve", flags=())
    verdicts = tuple(
        VerdictEntry(
            recipe="Org/Name",
            combinations=n,
            selections=(),
            verdict=VerdictKind.GUIDE_ONLY,
            roles=(role,),
        )
        for n in range(3 * json_report._ENTRIES_PER_WRITE + 1)
    )
    many = empty.model_copy(update={"verdicts": verdicts})
    assert streamed(many) == model_json(many) + "\n"


# Real data --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedded() -> tuple[ResolvedInputs, tuple[EvidenceIndex, PolicyNormaliser, Declarations]]:
    """The embedded recipe, ledger and evidence (the defaults of ``provenance audit``)."""
    resolved = default_inputs(AuditInputs(recipes=("MiniMaxAI/MiniMax-M3",)))
    normaliser = PolicyNormaliser()
    graph, declarations = load_graph(resolved.ledger, resolved.evidence, normaliser)
    return resolved, (graph, normaliser, declarations)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param(AuditFilters(hardware=("b300",)), id="b300"),
        pytest.param(AuditFilters(hardware=("h200",), pd_pairing="star"), id="h200-star"),
    ],
)
def test_embedded_minimax_audit_byte_for_byte(
    embedded: tuple[ResolvedInputs, tuple[EvidenceIndex, PolicyNormaliser, Declarations]],
    filters: AuditFilters,
) -> None:
    resolved, (graph, normaliser, declarations) = embedded
    report = audit(recipe_inputs(resolved, filters), graph, normaliser, declarations)
    assert len(report.verdicts) > 100 and report.records
    assert any(s.pd is not None for e in report.verdicts for s in e.selections)
    assert streamed(report) == model_json(report) + "\n"
