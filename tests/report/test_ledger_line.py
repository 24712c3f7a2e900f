"""Every output names the ledger it used, with its InferenceX revision and date."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest

from provenance.audit.verdicts import AuditReport
from provenance.model.ledger import LedgerIdentity, SourceRevision
from provenance.report.formats import FORMATS, write_report
from provenance.report.html import render_html
from provenance.store.ledger import ledger_identity

REVISION = "843c6254ff69b567f772f6a5fd97675af3d04431"
LINE = "ledger my-ledger (InferenceX 843c6254ff69, 2026-08-21)"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def identified(full_report: AuditReport) -> AuditReport:
    source = LedgerIdentity(
        path="my-ledger",
        inferencex=SourceRevision(revision=REVISION, date=dt.date(2026, 8, 21)),
    )
    return full_report.model_copy(update={"ledger_source": source})


def test_the_json_report_carries_the_ledger_source(identified: AuditReport) -> None:
    """(The JSON writer dumps the whole model; the sample report has no record table.)"""
    source = json.loads(identified.model_dump_json(include={"ledger_source"}))["ledger_source"]
    assert source["inferencex"] == {
        "repo": "SemiAnalysisAI/InferenceX",
        "revision": REVISION,
        "date": "2026-08-21",
    }


@pytest.mark.parametrize("fmt", sorted(set(FORMATS) - {"json"}))
def test_each_format_names_the_ledger_revision_and_date(identified: AuditReport, fmt: str) -> None:
    out = io.StringIO()
    write_report(identified, fmt, out)
    text = out.getvalue()
    if fmt == "sarif":
        assert json.loads(text)["runs"][0]["properties"]["ledger"] == LINE
    elif fmt == "html":
        assert json.dumps(LINE)[1:-1] in render_html(identified)
    else:
        assert LINE in text.replace("\\", "")


def test_a_ledger_without_manifest_says_the_revision_is_unknown(report: AuditReport) -> None:
    bare = report.model_copy(update={"ledger_source": LedgerIdentity(path="old")})
    out = io.StringIO()
    write_report(bare, "text", out)
    assert "ledger old (no manifest: InferenceX revision unknown)" in out.getvalue()


def test_the_embedded_ledger_is_identified_by_its_manifest() -> None:
    identity = ledger_identity(ROOT / "ledger")
    assert identity.inferencex is not None
    assert identity.inferencex.revision == REVISION
    # the commit date in UTC (2026-08-21T21:59:59-07:00)
    assert identity.inferencex.date == dt.date(2026, 8, 22)
    assert "(InferenceX 843c6254ff69, 2026-08-22)" in identity.describe()
