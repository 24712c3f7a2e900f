"""A reverted PR backs nothing: a record only reverted entries cite is no evidence.

It is never a candidate, the nearest evidence (validated or overall) or the source of
a reason; a record also cited by an entry that was not reverted (a re-landing PR that
cites the same content) stays evidence under that entry's PR alone. On recipes 8959cf6,
Kimi-K2.6's audit named InferenceX#2158 (reverted by #2227 the same day, re-landed by
#2228 with other records) in a nearest point and in reason sources; it names it nowhere.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from audit_builders import StandInNormaliser, entry, graph_of, single_combo, single_record
from click.testing import CliRunner
from recipes_support import REPO, full_checkout

from provenance.audit.pipeline import RecipeInput, audit
from provenance.audit.verdicts import AuditReport
from provenance.cli.main import cli
from provenance.model.ledger import LedgerEntry, RevertLink
from provenance.model.reasons import VerdictKind
from provenance.model.record import EvidenceRecord

RECIPE = "MiniMaxAI/MiniMax-M3"
REVERTED = "SemiAnalysisAI/InferenceX#1"


def _reverted(number: int, *records: EvidenceRecord, relanded_by: int | None = None) -> LedgerEntry:
    """A PR with a green sweep whose merge a later merge reverted (and perhaps re-landed)."""
    link = RevertLink(pr=90, commit="9" * 40, source=f"git:{'9' * 40}")
    again = (
        RevertLink(pr=relanded_by, commit="8" * 40, source=f"git:{'8' * 40}")
        if relanded_by is not None
        else None
    )
    return entry(number, *records).model_copy(update={"reverted_by": link, "relanded_by": again})


def _named_prs(report: AuditReport) -> set[str]:
    """Every PR a verdict names as backing: nearest points, reason sources, evidence."""
    named: set[str] = set()
    for verdict in report.verdicts:
        for point in (*verdict.nearest, *verdict.nearest_overall):
            named.update(point.prs)
        for reason in verdict.reasons:
            named.update(reason.sources)
        for ref in verdict.evidence:
            named.update(ref.prs)
    for record in report.records:
        named.update(record.prs)
    for reverse in report.reverse:
        named.update(reverse.prs)
    return named


def test_a_record_only_a_reverted_pr_cites_is_no_evidence() -> None:
    normaliser = StandInNormaliser()
    # the recipe's exact flags, run by a PR that was reverted; a farther point of a live PR
    exact = single_record("k-exact", "tensor_parallel_size=8 block_size=128")
    farther = single_record("k-far", "tensor_parallel_size=8 block_size=64")
    graph = graph_of([exact, farther], [_reverted(1, exact), entry(2, farther)], normaliser)
    combos = [single_combo("--tensor-parallel-size 8 --block-size 128")]
    report = audit([RecipeInput(ref=RECIPE, combinations=combos)], graph, normaliser)
    (verdict,) = report.verdicts
    assert verdict.verdict is VerdictKind.GUIDE_ONLY
    assert [n.record for n in verdict.nearest] == [farther.id]
    assert not verdict.nearest_overall
    assert [r.evidence_value for r in verdict.reasons if r.flag == "block_size"] == ["64"]
    assert REVERTED not in _named_prs(report)
    assert "SemiAnalysisAI/InferenceX#2" in _named_prs(report)
    # kept apart, with its history, for the graph export
    assert set(graph.withdrawn) == {exact.id} and set(graph.records) == {farther.id}
    assert graph.withdrawn[exact.id].prs == (REVERTED,)
    assert [r.id for r in graph.every_record()] == sorted([exact.id, farther.id])


def test_a_record_also_cited_by_a_live_pr_keeps_only_that_pr() -> None:
    normaliser = StandInNormaliser()
    record = single_record("k", "tensor_parallel_size=8")
    relanding = entry(3, record)
    graph = graph_of([record], [_reverted(1, record, relanded_by=3), relanding], normaliser)
    assert not graph.withdrawn
    indexed = graph.records[record.id]
    assert indexed.prs == ("SemiAnalysisAI/InferenceX#3",) and indexed.validated
    report = audit(
        [RecipeInput(ref=RECIPE, combinations=[single_combo("--tensor-parallel-size 8")])],
        graph,
        normaliser,
    )
    (verdict,) = report.verdicts
    assert verdict.verdict is VerdictKind.RECOMMENDED
    assert REVERTED not in _named_prs(report)


def test_a_re_land_with_other_records_does_not_restore_the_reverted_ones() -> None:
    """#2158's case: the re-landing PR cites its own records, not the reverted PR's."""
    normaliser = StandInNormaliser()
    old = single_record("k", "tensor_parallel_size=8", conc=32)
    new = single_record("k", "tensor_parallel_size=8", conc=64)
    graph = graph_of([old, new], [_reverted(1, old, relanded_by=3), entry(3, new)], normaliser)
    assert set(graph.withdrawn) == {old.id} and set(graph.records) == {new.id}


def test_records_no_entry_cites_stay_evidence() -> None:
    normaliser = StandInNormaliser()
    record = single_record("k", "tensor_parallel_size=8")
    graph = graph_of([record], [], normaliser)
    assert set(graph.records) == {record.id} and not graph.withdrawn


KIMI = "models/moonshotai/Kimi-K2.6.yaml"


def test_kimi_k2_6_names_no_reverted_pr_as_evidence() -> None:
    """On recipes 8959cf6 with the embedded ledger: #2158 (reverted by #2227) appears
    nowhere in the JSON report; the verdicts are those measured before the change (no
    reverted PR was the only backing of a recommendation: a reverted PR validates
    nothing), and the nearest points overall name other, live PRs."""
    checkout = full_checkout()
    if checkout is None:
        pytest.skip("no vllm-project/recipes checkout at 8959cf6")

    cwd = os.getcwd()  # the embedded ledger and evidence are found from the checkout
    os.chdir(REPO)
    try:
        result = CliRunner().invoke(
            cli, ["audit", "--recipes-root", str(checkout), KIMI, "--format", "json"]
        )
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    out = result.stdout
    assert not re.search(r"InferenceX#2158\b", out)
    report = json.loads(out)
    summary = report["summary"]
    assert (summary["combinations"], summary["recommended"]) == (13_416, 0)
    named = {pr for v in report["verdicts"] for n in v["nearest_overall"] for pr in n["prs"]}
    assert named and "SemiAnalysisAI/InferenceX#2158" not in named
