"""``provenance verify``: every kind of tampering is caught with the right status and exit code."""

from __future__ import annotations

import json
from pathlib import Path

import git
import jsonschema
import pytest
from click.testing import CliRunner, Result
from ledger_factories import PR, make_entry, make_record
from ledger_workspace import Workspace

from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_INTEGRITY, EXIT_OK, EXIT_USAGE, InputError
from provenance.model.ledger import LedgerFile, PrRef
from provenance.model.record import ContentMove, ContentPlace, EvidenceRecord
from provenance.schemas import generate
from provenance.store.verify import Status, VerifyReport, verify

LAUNCHER = "benchmarks/single_node/minimaxm3_fp4_b200.sh"


def run_verify(workspace: Workspace, *extra: str) -> Result:
    return CliRunner().invoke(
        cli,
        [
            "verify",
            "--ledger",
            str(workspace.ledger_root),
            "--evidence",
            str(workspace.evidence_root),
            "--format",
            "json",
            *extra,
        ],
    )


def report_of(result: Result) -> VerifyReport:
    return VerifyReport.model_validate_json(result.stdout)


def populate(workspace: Workspace, count: int = 3) -> list[str]:
    ids = [workspace.store.put(make_record(i))[0] for i in range(count)]
    workspace.ledger.write_entry(make_entry(tuple(ids)))
    return ids


def statuses(report: VerifyReport) -> dict[str | None, Status]:
    return {r.id: r.status for r in report.records}


def test_clean_ledger_verifies(workspace: Workspace) -> None:
    ids = populate(workspace)
    result = run_verify(workspace)
    assert result.exit_code == EXIT_OK, result.output
    report = report_of(result)
    assert report.ok
    assert statuses(report) == dict.fromkeys(ids, Status.OK)
    assert report.summary.entries == 1
    assert all(r.referenced_by == (str(PR),) for r in report.records)
    jsonschema.validate(json.loads(result.stdout), generate("verify"))
    ledger, evidence = str(workspace.ledger_root), str(workspace.evidence_root)
    text = CliRunner().invoke(cli, ["verify", "--ledger", ledger, "--evidence", evidence])
    assert text.exit_code == EXIT_OK
    assert "3 ok, 0 suspect, 0 corrupt, 0 dangling" in text.stdout
    assert "verify: OK" in text.stdout


def test_orphans_are_warnings(workspace: Workspace) -> None:
    populate(workspace)
    orphan, _ = workspace.store.put(make_record(99))
    result = run_verify(workspace)
    assert result.exit_code == EXIT_OK
    report = report_of(result)
    assert report.summary.orphans == 1
    assert any(orphan in w for w in report.warnings)


def test_edited_flag_value_is_corrupt(workspace: Workspace) -> None:
    ids = populate(workspace)
    path = workspace.store.path_of(ids[1])
    path.write_text(path.read_text().replace('"kv_cache_dtype": "fp8"', '"kv_cache_dtype": "auto"'))
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INTEGRITY
    report = report_of(result)
    assert statuses(report)[ids[1]] is Status.CORRUPT
    assert statuses(report)[ids[0]] is Status.OK
    assert report.entries[0].status is Status.CORRUPT
    text = run_verify(workspace, "--format", "text")
    assert f"CORRUPT {ids[1]}" in text.stdout
    assert "verify: FAILED" in text.stdout


def test_renamed_record_is_corrupt_and_its_reference_dangles(workspace: Workspace) -> None:
    ids = populate(workspace)
    forged = "sha256:" + "e" * 64
    target = workspace.store.path_of(forged)
    target.parent.mkdir(parents=True, exist_ok=True)
    workspace.store.path_of(ids[0]).rename(target)
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INTEGRITY
    found = statuses(report_of(result))
    assert found[forged] is Status.CORRUPT
    assert found[ids[0]] is Status.DANGLING


def test_deleted_record_dangles(workspace: Workspace) -> None:
    ids = populate(workspace)
    workspace.store.path_of(ids[2]).unlink()
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INTEGRITY
    report = report_of(result)
    assert statuses(report)[ids[2]] is Status.DANGLING
    assert report.records[[r.id for r in report.records].index(ids[2])].referenced_by == (str(PR),)
    assert report.summary.dangling == 1


def test_stray_file_in_store_is_corrupt(workspace: Workspace) -> None:
    populate(workspace)
    (workspace.evidence_root / "notes.json").write_text("{}")
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INTEGRITY
    assert any(r.status is Status.CORRUPT and r.id is None for r in report_of(result).records)


def test_invalid_reference_in_ledger_dangles(workspace: Workspace) -> None:
    workspace.ledger.write_entry(make_entry(("sha256:nothex",)))
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INTEGRITY
    assert report_of(result).entries[0].status is Status.DANGLING


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  number: 2120", "  number: twenty"),
        ("merged_at: 2026-10-02", "merged_at: 2026-10-02\nmerged_at: 2026-10-02"),
    ],
)
def test_malformed_ledger_yaml_exits_3(workspace: Workspace, old: str, new: str) -> None:
    populate(workspace)
    path = workspace.ledger.path_of(PR)
    path.write_text(path.read_text().replace(old, new))
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INPUT
    assert f"{path}:" in result.stderr
    assert "Traceback" not in result.output


def test_missing_directories_are_usage_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["verify", "--ledger", str(tmp_path / "no"), "--evidence", str(tmp_path)]
    )
    assert result.exit_code == EXIT_USAGE
    assert "does not exist" in result.stderr


def test_leftover_temp_files_are_warnings(workspace: Workspace) -> None:
    ids = populate(workspace)
    (workspace.store.path_of(ids[0]).parent / ".x.json.1.abcd.tmp").write_text("{")
    result = run_verify(workspace)
    assert result.exit_code == EXIT_OK
    assert any("temporary file" in w for w in report_of(result).warnings)


# --------------------------------------------------------------------------
# With an InferenceX checkout


class Checkout:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = git.Repo.init(path)
        self.actor = git.Actor("test", "test@example.invalid")

    def commit(self, files: dict[str, str]) -> str:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            self.repo.index.add([name])
        return self.repo.index.commit("change", author=self.actor, committer=self.actor).hexsha

    def blob(self, commit: str, name: str) -> str:
        return str((self.repo.commit(commit).tree / name).hexsha)


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path / "inferencex")


def populate_from(workspace: Workspace, checkout: Checkout) -> tuple[str, str]:
    commit = checkout.commit({LAUNCHER: "vllm serve model --tensor-parallel-size 4\n"})
    blob = checkout.blob(commit, LAUNCHER)
    record_id, _ = workspace.store.put(make_record(0, commit=commit, blob_sha=blob))
    workspace.ledger.write_entry(
        make_entry(
            (record_id,),
            merge_commit=commit,
            files=(LedgerFile(path=LAUNCHER, blob_sha=blob, commit=commit),),
        )
    )
    return commit, record_id


def same_record(record: EvidenceRecord) -> EvidenceRecord:
    return record.model_copy()


def test_blobs_and_reextraction_ok(workspace: Workspace, checkout: Checkout) -> None:
    _, record_id = populate_from(workspace, checkout)
    report = verify(
        workspace.ledger_root, workspace.evidence_root, checkout.path, reextract=same_record
    )
    assert statuses(report) == {record_id: Status.OK}
    assert report.ok, report
    assert report.reextraction == "done"
    assert report.summary.reextracted == 1
    assert report.summary.blobs_checked == 2


def test_without_an_extractor_blobs_are_checked_and_reextraction_is_unavailable(
    workspace: Workspace, checkout: Checkout
) -> None:
    """The store imports no extractor: given none, it checks blobs and says so."""
    _, record_id = populate_from(workspace, checkout)
    report = verify(workspace.ledger_root, workspace.evidence_root, checkout.path)
    assert statuses(report) == {record_id: Status.OK}
    assert report.reextraction == "unavailable"
    assert report.summary.reextracted == 0
    assert report.summary.blobs_checked == 2
    assert any("re-extraction unavailable" in w for w in report.warnings)


def test_an_injected_extractor_reextracts(workspace: Workspace, checkout: Checkout) -> None:
    _, record_id = populate_from(workspace, checkout)
    calls: list[str] = []

    def extract(repo: Path, commit: str, *_args: object) -> object:
        calls.append(commit)
        raise InputError("no launcher here")

    report = verify(workspace.ledger_root, workspace.evidence_root, checkout.path, extract=extract)
    assert calls, "the injected extractor was not called"
    assert report.reextraction == "done"
    assert statuses(report) == {record_id: Status.SUSPECT}


def test_bare_mirror_works_too(workspace: Workspace, checkout: Checkout, tmp_path: Path) -> None:
    populate_from(workspace, checkout)
    bare = tmp_path / "mirror.git"
    checkout.repo.clone(str(bare), bare=True)
    report = verify(workspace.ledger_root, workspace.evidence_root, bare, reextract=same_record)
    assert report.ok, report


def test_changed_blob_is_suspect(workspace: Workspace, checkout: Checkout) -> None:
    commit, record_id = populate_from(workspace, checkout)
    other = checkout.commit({LAUNCHER: "vllm serve model --tensor-parallel-size 8\n"})
    # the ledger cites the new commit but the old blob SHA: the file changed since
    entry = workspace.ledger.entry(PR)
    assert entry is not None
    stale = LedgerFile(path=LAUNCHER, blob_sha=checkout.blob(commit, LAUNCHER), commit=other)
    workspace.ledger.write_entry(entry.model_copy(update={"files": (stale,)}))
    record = workspace.store.get(record_id)
    moved = record.model_copy(update={"source": record.source.model_copy(update={"commit": other})})
    moved_id, _ = workspace.store.put(moved)
    workspace.ledger.merge_entry(make_entry((moved_id,)))
    report = verify(
        workspace.ledger_root, workspace.evidence_root, checkout.path, reextract=same_record
    )
    assert report.exit_code == EXIT_INTEGRITY
    assert statuses(report) == {record_id: Status.OK, moved_id: Status.SUSPECT}
    assert report.entries[0].status is Status.SUSPECT
    assert any("is blob" in p for p in report.entries[0].problems)


def test_missing_commit_and_path_are_suspect(workspace: Workspace, checkout: Checkout) -> None:
    commit, _ = populate_from(workspace, checkout)
    unknown = workspace.store.put(make_record(5, commit="0" * 40))[0]
    absent = workspace.store.put(make_record(6, commit=commit, path="benchmarks/gone.sh"))[0]
    workspace.ledger.merge_entry(make_entry((unknown, absent)))
    report = verify(
        workspace.ledger_root, workspace.evidence_root, checkout.path, reextract=same_record
    )
    found = {r.id: r for r in report.records}
    assert found[unknown].status is Status.SUSPECT
    assert "not found" in found[unknown].problems[0]
    assert found[absent].status is Status.SUSPECT
    assert "does not exist" in found[absent].problems[0]


def test_reextraction_mismatch_is_suspect(workspace: Workspace, checkout: Checkout) -> None:
    _, record_id = populate_from(workspace, checkout)

    def changed(record: EvidenceRecord) -> EvidenceRecord:
        return record.model_copy(update={"image": "vllm/vllm-openai:v0.12.0"})

    root = workspace.ledger_root
    report = verify(root, workspace.evidence_root, checkout.path, reextract=changed)
    assert statuses(report) == {record_id: Status.SUSPECT}
    assert "differs in image" in report.records[0].problems[0]
    assert report.exit_code == EXIT_INTEGRITY
    assert report.entries[0].status is Status.SUSPECT
    assert report.entries[0].problems == (f"cites suspect record {record_id}",)

    report = verify(
        workspace.ledger_root, workspace.evidence_root, checkout.path, reextract=lambda r: None
    )
    assert statuses(report) == {record_id: Status.SUSPECT}
    assert "no such record" in report.records[0].problems[0]


def test_history_added_by_reextraction_is_a_warning(
    workspace: Workspace, checkout: Checkout
) -> None:
    """Records stored before ingest kept content history stay valid; only history may differ."""
    commit, record_id = populate_from(workspace, checkout)
    move = ContentMove(
        kind="moved",
        file_kind="launcher",
        commit=commit,
        pr=7,
        before=(ContentPlace(path="benchmarks/old.sh"),),
        after=(ContentPlace(path=LAUNCHER),),
    )

    def with_history(record: EvidenceRecord) -> EvidenceRecord:
        return record.model_copy(update={"history": (move,)})

    root = workspace.ledger_root
    report = verify(root, workspace.evidence_root, checkout.path, reextract=with_history)
    assert statuses(report) == {record_id: Status.OK}
    assert report.ok
    assert any("1 records were stored before" in w for w in report.warnings)

    def history_and_image(record: EvidenceRecord) -> EvidenceRecord:
        return with_history(record).model_copy(update={"image": "vllm/vllm-openai:v0.12.0"})

    report = verify(root, workspace.evidence_root, checkout.path, reextract=history_and_image)
    assert statuses(report) == {record_id: Status.SUSPECT}
    assert "image" in report.records[0].problems[0]


def test_cli_with_inferencex(workspace: Workspace, checkout: Checkout) -> None:
    populate_from(workspace, checkout)
    result = run_verify(workspace, "--inferencex", str(checkout.path))
    report = report_of(result)
    assert report.summary.blobs_checked == 2
    # the default re-extractor (InferenceX ingest) either ran or is reported unavailable
    assert report.reextraction in ("done", "unavailable")
    if report.reextraction == "unavailable":
        assert result.exit_code == EXIT_OK


def test_not_a_repository_is_usage_error(workspace: Workspace, tmp_path: Path) -> None:
    populate(workspace)
    (tmp_path / "plain").mkdir()
    result = run_verify(workspace, "--inferencex", str(tmp_path / "plain"))
    assert result.exit_code == EXIT_USAGE


def test_invalid_declarations_exit_3(workspace: Workspace) -> None:
    populate(workspace)
    workspace.ledger.declarations_path.write_text(
        "declarations:\n- id: a\n  match: {reasons: [made-up]}\n  reason: r\n  date: 2026-01-01\n"
    )
    result = run_verify(workspace)
    assert result.exit_code == EXIT_INPUT
    assert "declarations.yaml:3" in result.stderr


def test_other_repositories_are_not_checked_against_inferencex(
    workspace: Workspace, checkout: Checkout
) -> None:
    populate_from(workspace, checkout)
    record = make_record(9)
    foreign = record.model_copy(
        update={"source": record.source.model_copy(update={"repo": "someone/else"})}
    )
    foreign_id, _ = workspace.store.put(foreign)
    workspace.ledger.write_entry(make_entry((foreign_id,), pr=PrRef(repo="someone/else", number=3)))
    report = verify(
        workspace.ledger_root, workspace.evidence_root, checkout.path, reextract=same_record
    )
    assert report.ok, report
    assert any("someone/else" in w for w in report.warnings)
