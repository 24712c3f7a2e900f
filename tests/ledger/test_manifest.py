"""The ledger manifest: which InferenceX revision a ledger was built from, and how reports
name the ledger they used."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from provenance.errors import InputError
from provenance.model.ledger import LedgerManifest, SourceRevision
from provenance.store.ledger import Ledger, ledger_identity

REPO = Path(__file__).resolve().parents[2]
REVISION = "843c6254ff69b567f772f6a5fd97675af3d04431"


def _manifest() -> LedgerManifest:
    return LedgerManifest(
        inferencex=SourceRevision(revision=REVISION, date=dt.date(2026, 8, 21)),
        model_prefixes=("minimaxm3",),
    )


def test_written_manifest_reads_back_and_a_rewrite_is_a_no_op(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    assert ledger.manifest() is None
    assert ledger.write_manifest(_manifest())
    assert ledger.manifest() == _manifest()
    assert not ledger.write_manifest(_manifest())
    text = ledger.manifest_path.read_text()
    assert text.startswith("# provenance ledger manifest")
    assert f"revision: {REVISION}\n" in text and "date: 2026-08-21\n" in text


def test_malformed_manifest_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "manifest.yaml").write_text(
        "schema: provenance.ledger.manifest/v1\ninferencex:\n  revision: not-hex\n"
        "  date: 2026-08-21\n"
    )
    with pytest.raises(InputError) as info:
        Ledger(tmp_path).manifest()
    assert "manifest.yaml:3" in str(info.value)
    (tmp_path / "manifest.yaml").write_text("schema: provenance.ledger.manifest/v9\n")
    with pytest.raises(InputError, match="unsupported manifest schema"):
        Ledger(tmp_path).manifest()


def test_identity_names_path_revision_and_date(tmp_path: Path) -> None:
    Ledger(tmp_path).write_manifest(_manifest())
    identity = ledger_identity(tmp_path)
    assert identity.inferencex is not None and identity.inferencex.revision == REVISION
    assert not identity.packaged
    assert identity.describe() == f"ledger {tmp_path} (InferenceX 843c6254ff69, 2026-08-21)"
    bare = ledger_identity(tmp_path / "nothing")
    assert bare.describe().endswith("(no manifest: InferenceX revision unknown)")


def test_the_embedded_ledger_has_a_manifest_matching_its_readme() -> None:
    manifest = Ledger(REPO / "ledger").manifest()
    assert manifest is not None
    readme = (REPO / "ledger" / "README.md").read_text()
    assert f"`{manifest.inferencex.revision}` ({manifest.inferencex.date.isoformat()})" in readme
