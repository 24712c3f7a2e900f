"""Extract evidence records and PR ledger entries from an InferenceX repository.

:func:`extract` reads one revision (or, with ``prs``, each listed PR at its
merge commit), builds one :class:`EvidenceRecord` per evidence point — config
key × search-space point, every role of the deployment in one record — and one
:class:`LedgerEntry` per PR that backs a record. Points that produce an
identical record (same flags, topology, sources …) collapse into one record
listing every workload point it covers.

Attribution, by content (:mod:`~provenance.evidence.inferencex.content_trace`).
A record at revision ``rev`` is backed by the PR whose squash commit introduced
the newest of its contents: its master-config points (image, model, runner,
precision, framework, shape and the search-space point) and its launcher text or
srt-slurm recipe. Commits that only moved, renamed or deprecated those contents
back nothing; they are the record's ``history``. PRs whose ``perf-changelog.yaml``
entry names the key and that merged at or after that origin re-swept the same
content and back the record too. An archived entry evaluated with a launcher
changed after its archiving was never swept that way and yields no record. With
``prs``, each PR N is ingested at its merge commit and only the records N backs
there are kept (records whose content N introduced, or whose key N's changelog
entry names). See ``docs/evidence.md``.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import multiprocessing
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from provenance.errors import InputError
from provenance.evidence.inferencex.amd_disagg import (
    NotUnderstoodError,
    is_amd_vllm_disagg,
    read_point,
)
from provenance.evidence.inferencex.blocks import changed_by
from provenance.evidence.inferencex.changelog import changelog_links
from provenance.evidence.inferencex.content_trace import (
    Place,
    Trace,
    file_contents,
    file_key,
    master_contents,
    move_kind,
    point_key,
    trace,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
    pr_head,
    removing_commit,
    require_pr_commit,
)
from provenance.evidence.inferencex.lineage import Lineage
from provenance.evidence.inferencex.master import (
    FileResults,
    MasterEntry,
    MultiNodePoint,
    RecentFiles,
    SingleNodePoint,
    load_master_configs,
)
from provenance.evidence.inferencex.multinode_launchers import (
    is_llmd,
    llmd_recipe_path,
    llmd_skip,
    without_config_file_skip,
)
from provenance.evidence.inferencex.scripts import (
    ArgvNotNormalisableError,
    ScriptResolution,
    evaluate_point,
    resolve_script,
)
from provenance.evidence.inferencex.skips import (
    SkipCode,
    SkipCount,
    legacy_skips,
    unresolved_script,
)
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.evidence.inferencex.srt_slurm import (
    NotVllmRecipeError,
    SrtRecipe,
    check_against_master,
    load_recipe_bytes,
    recipe_repo_path,
)
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, LedgerFile, PrRef
from provenance.model.record import (
    ContentMove,
    ContentPlace,
    EvidenceRecord,
    EvidenceSource,
    PartialMarker,
    RoleTopology,
    SourceFile,
    Topology,
    WorkloadPoint,
)
from provenance.sources.git import Commit, MissingObjectError, Repo, open_repo, resolve_commit
from provenance.store.extraction_cache import CACHE_FORMAT, ExtractionCache, cache_key

INFERENCEX_REPO = "SemiAnalysisAI/InferenceX"
HISTORY_ROOTS = ("benchmarks",)

#: progress(done, total, what)
Progress = Callable[[int, int, str], None]
FileKind = Literal["master-config", "launcher", "srt-slurm-recipe", "perf-changelog", "other"]
MoveFileKind = Literal["master-config", "launcher", "srt-slurm-recipe", "other"]


class IngestSummary(BaseModel):
    """What an ingest read, produced, and could not do."""

    model_config = ConfigDict(extra="forbid")

    commits: list[str] = Field(default_factory=list)
    files_read: int = 0
    config_keys: int = 0
    points: int = 0
    records: int = 0
    partial_records: int = 0
    partial_by_construct: dict[str, int] = Field(default_factory=dict)
    unresolved_scripts: list[str] = Field(default_factory=list)
    #: Points that yielded no record, per skip code and framework (``skips.py``).
    skipped: list[SkipCount] = Field(default_factory=list)
    unlinked_records: int = 0
    warnings: list[str] = Field(default_factory=list)

    @field_validator("skipped", mode="before")
    @classmethod
    def _legacy_skipped(cls, value: Any) -> Any:
        return legacy_skips(value)

    def skip(self, code: SkipCode, framework: str, keys: Iterable[str], count: int = 1) -> None:
        """Count ``count`` points of ``framework`` (config ``keys``) skipped for ``code``."""
        for item in self.skipped:
            if item.code == code and item.framework == framework:
                item.count += count
                item.keys = sorted(set(item.keys).union(keys))
                return
        self.skipped.append(
            SkipCount(code=code, framework=framework, count=count, keys=sorted(set(keys)))
        )

    def skip_counts(self) -> dict[SkipCode, int]:
        """Skipped points per code, all frameworks together."""
        counts: dict[SkipCode, int] = {}
        for item in self.skipped:
            counts[item.code] = counts.get(item.code, 0) + item.count
        return counts

    def absorb(self, part: IngestSummary) -> None:
        """Add the summary of one more commit's extraction (before :func:`_finish`)."""
        self.commits.extend(part.commits)
        self.files_read += part.files_read
        self.config_keys += part.config_keys
        self.points += part.points
        for item in part.skipped:
            self.skip(item.code, item.framework, item.keys, item.count)
        self.unresolved_scripts.extend(part.unresolved_scripts)
        self.unlinked_records += part.unlinked_records
        self.warnings.extend(part.warnings)


class CachedExtraction(BaseModel):
    """One commit's extraction as the extraction cache keeps it (see ``cache.py``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    format: str
    key: str
    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary

    def problem(self, commit: str, only_pr: int | None) -> str | None:
        """Why this entry cannot be the extraction at ``commit`` (None when it can)."""
        if self.format != CACHE_FORMAT:
            return f"format {self.format!r} is not {CACHE_FORMAT!r}"
        if self.summary.commits != [commit]:
            return "it is the extraction of another commit"
        ids = set()
        for record in self.records:
            if record.compute_id() != record.id:
                return f"record {record.id} does not match its content"
            ids.add(record.id)
        for entry in self.entries:
            if only_pr is not None and entry.pr.number != only_pr:
                return f"it has a ledger entry for #{entry.pr.number}, not #{only_pr}"
            if not set(entry.records) <= ids:
                return f"the entry of #{entry.pr.number} names records it does not hold"
        return None


class IngestResult(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary


@dataclass
class _Draft:
    """A record before collapsing: its content without workloads, plus its workloads."""

    record: EvidenceRecord
    workloads: list[WorkloadPoint]
    attributed_files: list[str]
    entry_path: str
    archived: bool
    model_prefix: str = ""
    #: content keys (:func:`point_key`) of the master-config points the record covers
    point_keys: set[str] = field(default_factory=set)


@dataclass
class _Extraction:
    drafts: list[_Draft] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)


def _partial_key(marker: PartialMarker) -> tuple[str, str, int | None, str]:
    return (marker.construct_name, marker.path, marker.line, marker.detail)


def _dedupe_partial(markers: Iterable[PartialMarker]) -> tuple[PartialMarker, ...]:
    seen: dict[tuple[str, str, int | None, str], PartialMarker] = {}
    for marker in markers:
        seen.setdefault(_partial_key(marker), marker)
    return tuple(sorted(seen.values(), key=_partial_key_sort))


def _partial_key_sort(marker: PartialMarker) -> tuple[str, int, str, str]:
    return (marker.path, marker.line or 0, marker.construct_name, marker.detail)


def _source(snapshot: Snapshot, files: Iterable[tuple[str, FileKind]]) -> EvidenceSource:
    entries: dict[str, SourceFile] = {}
    for path, kind in files:
        sha = snapshot.blob_sha(path)
        if sha is not None:
            entries[path] = SourceFile(path=path, blob_sha=sha, kind=kind)
    return EvidenceSource(
        repo=INFERENCEX_REPO,
        commit=snapshot.sha,
        files=tuple(entries[p] for p in sorted(entries)),
    )


def _workload_points(point: MultiNodePoint) -> list[WorkloadPoint]:
    """One workload per concurrency of a multinode search-space point."""
    return [
        WorkloadPoint(
            scenario=point.scenario,
            isl=point.isl,
            osl=point.osl,
            conc=conc,
            prefill=point.prefill.label() if point.prefill else None,
            decode=point.decode.label() if point.decode else None,
        )
        for conc in point.concs
    ]


def _single_topology(point: SingleNodePoint) -> Topology:
    gpus = point.tp * point.pp * point.pcp_size
    role = RoleTopology(
        workers=1,
        gpus_per_worker=gpus,
        tp=1 if point.dp_attn else point.tp,
        ep=point.ep,
        dp=point.tp if point.dp_attn else 1,
        dp_attention=point.dp_attn,
        expert_parallel=point.dp_attn or point.ep > 1,
        nodes=1,
    )
    return Topology(kind="single_node", roles={"serve": role}, nodes=1, total_gpus=gpus)


class _Extractor:
    """Builds draft records for the config entries of one snapshot."""

    def __init__(
        self,
        snapshot: Snapshot,
        summary: IngestSummary,
        progress: Progress | None,
        relevant: Callable[[str, str], bool] | None = None,
        removed_by: Callable[[str], HistoryCommit | None] | None = None,
    ):
        self.snapshot = snapshot
        # path -> the earlier commit that removed it (None: never in the tree)
        self.removed_by = removed_by
        self.summary = summary
        self.progress = progress
        # (config key, launcher or recipe path) -> worth evaluating (``--pr`` pre-filter)
        self.relevant = relevant
        self._resolutions: dict[tuple[str, str, str, str], ScriptResolution] = {}
        self._recipes: dict[str, SrtRecipe | SkipCode] = {}

    def run(self, entries: list[MasterEntry]) -> _Extraction:
        out = _Extraction()
        total = sum(len(e.single_points) + len(e.multi_points) for e in entries)
        done = 0
        for entry in entries:
            out.keys.add(entry.key)
            if not entry.hardware_known:
                self.summary.warnings.append(
                    f"{entry.key}: runner {entry.runner!r} is no recipes hardware id; "
                    "records keep the raw runner label as hardware"
                )
            for point in entry.single_points:
                self._single(entry, point, out)
                done += 1
                if self.progress:
                    self.progress(done, total, entry.key)
            for multi in entry.multi_points:
                self._multi(entry, multi, out)
                done += 1
                if self.progress:
                    self.progress(done, total, entry.key)
        return out

    def _record(
        self,
        entry: MasterEntry,
        files: list[tuple[str, FileKind]],
        topology: Topology,
        roles: dict[str, FlagSet],
        partial: Iterable[PartialMarker],
    ) -> EvidenceRecord:
        """A record without workloads (added when identical points collapse)."""
        return EvidenceRecord(
            source=_source(self.snapshot, files),
            config_key=entry.key,
            checkpoint=entry.model,
            hardware=entry.hardware,
            runner=entry.runner,
            precision=entry.precision,
            framework=entry.framework,
            image=entry.image,
            topology=topology,
            workloads=(),
            roles=roles,
            partial=_dedupe_partial(partial),
        )

    def _consider(self, key: str, path: str) -> bool:
        """Whether a point is in scope (the ``--pr`` pre-filter); counts the ones that are."""
        if self.relevant is not None and not self.relevant(key, path):
            return False
        self.summary.points += 1
        return True

    # single node ---------------------------------------------------------------------
    def _single(self, entry: MasterEntry, point: SingleNodePoint, out: _Extraction) -> None:
        cache_key = (entry.key, entry.path, point.scenario, point.spec_decoding)
        resolution = self._resolutions.get(cache_key)
        if resolution is None:
            resolution = resolve_script(self.snapshot, entry, point)
            self._resolutions[cache_key] = resolution
            if resolution.path is None:
                self.summary.unresolved_scripts.append(
                    unresolved_script(
                        entry.key,
                        point.scenario,
                        point.spec_decoding,
                        self.snapshot.sha,
                        resolution.reason or "",
                    )
                )
            elif resolution.via_deprecated:
                self.summary.warnings.append(
                    f"{entry.key}: archived launcher resolved in its deprecated/ directory: "
                    f"{resolution.path}"
                )
        if not self._consider(entry.key, resolution.path or ""):
            return
        if resolution.path is None:
            unknown = resolution.subdir_unknown is not None
            self._skip("scenario-subdir-unknown" if unknown else "launcher-not-found", entry)
            return
        try:
            evidence = evaluate_point(self.snapshot, entry, point, resolution)
        except MissingObjectError:
            raise
        except ArgvNotNormalisableError as exc:
            self._skip("argv-not-normalisable", entry)
            self.summary.warnings.append(f"{entry.key}: {exc}")
            return
        except InputError as exc:
            self._skip("launcher-not-evaluable", entry)
            self.summary.warnings.append(f"{entry.key}: {exc}")
            return
        if not evidence.served:
            self._skip("no-vllm-engine", entry)
            return
        files: list[tuple[str, FileKind]] = [
            (entry.path, "master-config"),
            (evidence.script, "launcher"),
        ]
        if resolution.launcher:
            files.append((resolution.launcher, "other"))
        record = self._record(
            entry, files, _single_topology(point), {"serve": evidence.flags}, evidence.partial
        )
        workload = WorkloadPoint(
            scenario=point.scenario,
            isl=point.isl,
            osl=point.osl,
            conc=point.conc,
            tp=point.tp,
            ep=point.ep,
            dp_attn=point.dp_attn,
        )
        out.drafts.append(
            _Draft(
                record,
                [workload],
                [evidence.script],
                entry.path,
                entry.archived,
                entry.model_prefix,
                {point_key(entry, point)},
            )
        )

    # multi node ----------------------------------------------------------------------
    def _skip(self, code: SkipCode, entry: MasterEntry) -> None:
        self.summary.skip(code, entry.framework, [entry.key])

    def _recipe(self, path: str) -> SrtRecipe | SkipCode:
        cached = self._recipes.get(path)
        if cached is not None:
            return cached
        raw = self.snapshot.read(path)
        result: SrtRecipe | SkipCode
        if raw is None:
            removed = self.removed_by(path) if self.removed_by is not None else None
            if removed is None:
                result = "recipe-not-in-tree"
                self.summary.warnings.append(
                    f"srt-slurm recipe {path}: absent at {self.snapshot.sha[:9]} and on its "
                    "first-parent history"
                )
            else:
                result = "recipe-deleted"
                pr = f" (#{removed.pr})" if removed.pr is not None else ""
                self.summary.warnings.append(
                    f"srt-slurm recipe {path}: absent at {self.snapshot.sha[:9]}, removed by "
                    f"{removed.sha[:9]}{pr} {removed.title}"
                )
        else:
            try:
                result = load_recipe_bytes(raw, path)
            except NotVllmRecipeError:
                result = "recipe-not-vllm"
            except InputError as exc:
                result = "recipe-unreadable"
                self.summary.warnings.append(str(exc))
        self._recipes[path] = result
        return result

    def _amd_disagg(self, entry: MasterEntry, point: MultiNodePoint, out: _Extraction) -> None:
        """An AMD vllm-disagg point (``amd_disagg.py``): prefill/decode from the launcher chain."""
        try:
            evidence = read_point(self.snapshot, entry, point)
        except MissingObjectError:
            raise
        except NotUnderstoodError as exc:
            if self._consider(entry.key, ""):
                self._skip("amd-disagg-python-eval", entry)
                self.summary.warnings.append(f"{entry.key}: AMD vllm-disagg chain: {exc}")
            return
        except InputError as exc:
            if self._consider(entry.key, ""):
                self._skip("launcher-not-evaluable", entry)
                self.summary.warnings.append(f"{entry.key}: {exc}")
            return
        if not self._consider(entry.key, evidence.launcher):
            return
        if evidence.via_deprecated:
            self.summary.warnings.append(
                f"{entry.key}: archived launcher resolved in its deprecated/ directory: "
                f"{evidence.launcher}"
            )
        files: list[tuple[str, FileKind]] = [(entry.path, "master-config")]
        files += [(path, "launcher") for path in evidence.files() if path.endswith(".sh")]
        files += [(path, "other") for path in evidence.files() if not path.endswith(".sh")]
        files.append((evidence.runner_launcher, "other"))
        record = self._record(
            entry,
            files,
            evidence.topology,
            {name: role.flags for name, role in evidence.roles.items()},
            evidence.partial,
        )
        workloads = _workload_points(point)
        out.drafts.append(
            _Draft(
                record,
                workloads,
                evidence.attributed(),
                entry.path,
                entry.archived,
                entry.model_prefix,
                {point_key(entry, point)},
            )
        )

    def _multi(self, entry: MasterEntry, point: MultiNodePoint, out: _Extraction) -> None:
        config_file = point.config_file()
        if config_file is None:
            if is_amd_vllm_disagg(entry.framework, self.snapshot):
                self._amd_disagg(entry, point, out)
            elif self._consider(entry.key, ""):
                self._skip(without_config_file_skip(self.snapshot, entry.framework), entry)
            return
        origin = f"{entry.path}:{point.line} ({entry.key})"
        if is_llmd(entry.framework):
            path = self.snapshot.safe_path(llmd_recipe_path(config_file), origin=origin)
            if self._consider(entry.key, path):
                self._skip(llmd_skip(self.snapshot, path), entry)
            return
        path, selector = recipe_repo_path(config_file, origin=entry.path)
        path = self.snapshot.safe_path(path, origin=origin)
        if not self._consider(entry.key, path):
            return
        recipe = self._recipe(path)
        if isinstance(recipe, str):
            self._skip(recipe, entry)
            return
        partial = list(recipe.partial)
        if selector:
            partial.append(
                PartialMarker(
                    construct_name="srt-slurm-selector",
                    path=path,
                    detail=f"CONFIG_FILE selector {selector!r} (srt-slurm override) not evaluated",
                )
            )
        for problem in check_against_master(recipe, point, image=entry.image):
            self.summary.warnings.append(f"{entry.key}: {problem}")
        record = self._record(
            entry,
            [(entry.path, "master-config"), (path, "srt-slurm-recipe")],
            recipe.topology,
            {name: role.flags for name, role in recipe.roles.items()},
            partial,
        )
        workloads = _workload_points(point)
        out.drafts.append(
            _Draft(
                record,
                workloads,
                [path],
                entry.path,
                entry.archived,
                entry.model_prefix,
                {point_key(entry, point)},
            )
        )


def _workload_sort(point: WorkloadPoint) -> tuple[Any, ...]:
    """Numeric order: scenario, isl, osl, conc, tp, ep, dp-attn, then the role labels."""
    return (
        point.scenario,
        point.isl or 0,
        point.osl or 0,
        point.conc or 0,
        point.tp or 0,
        point.ep or 0,
        bool(point.dp_attn),
        json.dumps(point.model_dump(mode="json"), sort_keys=True),
    )


def _collapse(drafts: list[_Draft]) -> list[_Draft]:
    """Merge drafts whose records are identical apart from workloads."""
    groups: dict[str, _Draft] = {}
    for draft in drafts:
        content = draft.record.model_dump(mode="json", by_alias=True)
        key = json.dumps(content, sort_keys=True)
        existing = groups.get(key)
        if existing is None:
            groups[key] = replace(
                draft,
                workloads=list(draft.workloads),
                attributed_files=list(draft.attributed_files),
                point_keys=set(draft.point_keys),
            )
        else:
            existing.workloads.extend(draft.workloads)
            existing.point_keys |= draft.point_keys
    result = []
    for draft in groups.values():
        unique = {_workload_sort(w): w for w in draft.workloads}
        workloads = tuple(unique[k] for k in sorted(unique))
        record = draft.record.model_copy(update={"workloads": workloads}).with_id()
        result.append(replace(draft, record=record, workloads=list(workloads)))
    return result


@dataclass
class _Attribution:
    """Which PRs back each record, from git history and perf-changelog."""

    links: dict[str, set[int]] = field(default_factory=dict)
    commits: dict[int, HistoryCommit] = field(default_factory=dict)
    changelog_prs: set[int] = field(default_factory=set)


def _moves(
    traces: Iterable[tuple[str, Trace]], kinds: Mapping[str, FileKind]
) -> tuple[ContentMove, ...]:
    """The moves of a record's contents as :class:`ContentMove`, newest first, once each."""
    found: dict[tuple[Any, ...], tuple[int, ContentMove]] = {}
    for path, content in traces:
        kind = kinds.get(path, "other")
        file_kind: MoveFileKind = "other" if kind == "perf-changelog" else kind
        for move in content.moves:
            made = ContentMove(
                kind=move_kind(move),
                file_kind=file_kind,
                commit=move.commit.sha,
                pr=move.commit.pr,
                before=_places(move.before),
                after=_places(move.after),
            )
            token = (made.commit, made.file_kind, made.before, made.after)
            found.setdefault(token, (move.commit.index, made))
    ordered = sorted(found.items(), key=lambda item: (item[1][0], repr(item[0])))
    return tuple(made for _token, (_index, made) in ordered)


def _read(snapshot: Snapshot, path: str) -> bytes:
    return snapshot.read(path) or b""


def _places(places: Iterable[Place]) -> tuple[ContentPlace, ...]:
    return tuple(ContentPlace(path=p, config_key=k or None) for p, k in sorted(places))


def _attribute(
    repo: Repo,
    snapshot: Snapshot,
    lineage: Lineage,
    drafts: list[_Draft],
    summary: IngestSummary,
) -> tuple[_Attribution, list[_Draft]]:
    """Link each record to the PRs that back it, by content; drop archived points never
    swept as read; add the moves of each record's content to it as ``history``.

    The backing PR is the newest origin (:func:`content_trace.trace`) of the record's
    master-config points and launcher or recipe text. An entry archived in
    ``configs/deprecated`` is evaluated with the launcher of the ingested revision;
    when that launcher's content changed after the entry was archived, the
    combination was never swept and is not evidence.
    """
    result = _Attribution()
    history = lineage.history_of(snapshot.sha)
    prefixes = frozenset(d.model_prefix for d in drafts)
    wanted = {key for d in drafts for key in d.point_keys}
    points = trace(history, lineage.master_log(), master_contents(repo, prefixes), wanted)
    file_keys: dict[str, str] = {}
    for draft in drafts:
        for path in draft.attributed_files:
            blob = snapshot.blob_sha(path)
            if path not in file_keys and blob is not None:
                file_keys[path] = file_key(path, blob, functools.partial(_read, snapshot, path))
    file_log = lineage.file_log(HISTORY_ROOTS)
    files = trace(history, file_log, file_contents(repo), set(file_keys.values()))
    keys = {d.record.config_key for d in drafts}
    links, warnings = changelog_links(snapshot, keys)
    summary.warnings.extend(warnings)
    key_changelog: dict[str, list[HistoryCommit]] = {}
    for number, named in links.items():
        commit = history.by_pr.get(number)
        if commit is None:
            continue
        for key in named:
            key_changelog.setdefault(key, []).append(commit)
    kept: list[_Draft] = []
    for draft in drafts:
        kinds: dict[str, FileKind] = {f.path: f.kind for f in draft.record.source.files}
        traced = [(draft.entry_path, points[k]) for k in sorted(draft.point_keys) if k in points]
        traced_files = [(p, files[file_keys[p]]) for p in draft.attributed_files if p in file_keys]
        archived_since = None
        if draft.archived:
            archiving = [
                move.commit
                for _path, content in traced
                for move in content.moves
                if move_kind(move) == "deprecated"
            ]
            archived_since = min(archiving, key=lambda c: c.index) if archiving else None
        file_origins = [t.origin for _p, t in traced_files if t.origin is not None]
        if archived_since is not None and any(c.index < archived_since.index for c in file_origins):
            summary.skip(
                "archived-launcher-changed",
                draft.record.framework,
                [draft.record.config_key],
                len(draft.workloads),
            )
            continue
        moves = _moves([*traced, *traced_files], kinds)
        record = draft.record.model_copy(update={"history": moves}).with_id()
        draft = replace(draft, record=record)
        kept.append(draft)
        present = [t.origin for _p, t in traced if t.origin is not None] + file_origins
        prs: set[int] = set()
        if present:
            latest = min(present, key=lambda c: c.index)
            if latest.pr is not None:
                prs.add(latest.pr)
                result.commits[latest.pr] = latest
            for commit in key_changelog.get(record.config_key, []):
                after_change = commit.index <= latest.index
                before_archiving = archived_since is None or commit.index > archived_since.index
                if after_change and before_archiving and commit.pr is not None:
                    prs.add(commit.pr)
                    result.commits[commit.pr] = commit
                    result.changelog_prs.add(commit.pr)
        result.links[record.id] = prs
    return result, kept


def _entries(
    repo: Repo,
    drafts: list[_Draft],
    attribution: _Attribution,
    only: int | None,
    changelog_keys: dict[int, set[str]],
) -> list[LedgerEntry]:
    by_pr: dict[int, list[EvidenceRecord]] = {}
    for draft in drafts:
        for number in attribution.links.get(draft.record.id, set()):
            if only is not None and number != only:
                continue
            by_pr.setdefault(number, []).append(draft.record)
    entries = []
    for number in sorted(by_pr):
        records = by_pr[number]
        commit = attribution.commits[number]
        files: dict[tuple[str, str], LedgerFile] = {}
        for record in records:
            for source_file in record.source.files:
                files[(source_file.path, record.source.commit)] = LedgerFile(
                    path=source_file.path,
                    blob_sha=source_file.blob_sha,
                    commit=record.source.commit,
                    source="git",
                )
        sources = [f"git:{commit.sha}"]
        if number in attribution.changelog_prs or changelog_keys.get(number):
            sources.append("perf-changelog.yaml")
        keys = {r.config_key for r in records} | changelog_keys.get(number, set())
        entry = LedgerEntry(
            pr=PrRef(repo=INFERENCEX_REPO, number=number),
            title=commit.title,
            merge_commit=commit.sha,
            merged_at=commit.date,
            config_keys=tuple(sorted(keys)),
            files=tuple(files[k] for k in sorted(files)),
            records=tuple(sorted(r.id for r in records)),
            sources=tuple(sources),
        )
        entries.append(_with_head(entry, pr_head(repo, number)))
    return entries


def _with_head(entry: LedgerEntry, head: str | None) -> LedgerEntry:
    """``entry`` with its PR head commit (``refs/pull/N/head``, the last source) set to ``head``.

    The ref is not part of any commit, so it is looked up again whenever an
    extraction comes from the cache.
    """
    ref = f"refs/pull/{entry.pr.number}/head"
    sources = [s for s in entry.sources if s != ref]
    if head:
        sources.append(ref)
    return entry.model_copy(update={"pr_head": head, "sources": tuple(sources)})


def glob_filter(pattern: str | None) -> Callable[[str], bool]:
    """``--keys``: a shell-style glob over config keys (everything without one)."""
    if pattern is None:
        return lambda _key: True
    return lambda key: fnmatch.fnmatchcase(key, pattern)


def _select(model_prefix: str | None, keys: str | None) -> Callable[[str, Any], bool]:
    key_ok = glob_filter(keys)

    def wanted(key: str, raw: Any) -> bool:
        if model_prefix is not None and str(raw.get("model-prefix")) != model_prefix:
            return False
        return key_ok(key)

    return wanted


@dataclass
class _Shared:
    """What every commit of one ingest reads alike: the tip's first-parent line and the
    master-config files (by path and blob; the model-prefix and key filters are fixed)."""

    lineage: Lineage
    masters: FileResults = field(default_factory=RecentFiles)


def _ingest_commit(
    repo: Repo,
    commit: Commit,
    model_prefix: str | None,
    keys: str | None,
    only_pr: int | None,
    summary: IngestSummary,
    progress: Progress | None,
    shared: _Shared,
) -> tuple[list[EvidenceRecord], list[LedgerEntry]]:
    """One commit's records and entries (``shared.lineage``: a first-parent line holding it)."""
    snapshot = Snapshot(repo, commit)
    lineage = shared.lineage
    key_ok = glob_filter(keys)

    def prefilter(key: str, prefix: str | None) -> bool:
        # keep entries whose prefix is not written plainly: ``wanted`` decides those
        return key_ok(key) and (model_prefix is None or prefix in (None, model_prefix))

    masters = load_master_configs(
        snapshot, wanted=_select(model_prefix, keys), prefilter=prefilter, reuse=shared.masters
    )
    summary.warnings.extend(masters.warnings)
    summary.commits.append(snapshot.sha)
    entries = list(masters.entries)
    summary.config_keys += len({e.key for e in entries})
    relevant = None
    if only_pr is not None:
        # At PR N's merge commit only what N changed (or its changelog names) can be N's.
        paths, changed_keys = changed_by(repo, snapshot.sha)
        named, _ = changelog_links(snapshot, {e.key for e in entries})
        keys_of_pr = changed_keys | named.get(only_pr, set())

        def relevant(key: str, path: str) -> bool:
            return key in keys_of_pr or path in paths

    history = lineage.history_of(snapshot.sha)

    def removed_by(path: str) -> HistoryCommit | None:
        return removing_commit(history, lineage.path_changes(HISTORY_ROOTS), path)

    extraction = _Extractor(snapshot, summary, progress, relevant, removed_by).run(entries)
    drafts = _collapse(extraction.drafts)
    attribution, drafts = _attribute(repo, snapshot, lineage, drafts, summary)
    changelog_keys: dict[int, set[str]] = {}
    if only_pr is not None:
        links, _ = changelog_links(snapshot, extraction.keys)
        changelog_keys = {only_pr: links.get(only_pr, set())}
        merge = lineage.history.by_sha[snapshot.sha]
        kept = []
        for draft in drafts:
            backed = only_pr in attribution.links.get(draft.record.id, set())
            swept = draft.record.config_key in changelog_keys[only_pr]
            if backed or swept:
                attribution.links[draft.record.id] = {only_pr}
                kept.append(draft)
        attribution.commits[only_pr] = merge
        if changelog_keys[only_pr]:
            attribution.changelog_prs.add(only_pr)
        drafts = kept
    records = [d.record for d in drafts]
    summary.files_read += len(snapshot.read_blobs)
    for record in records:
        if not attribution.links.get(record.id):
            summary.unlinked_records += 1
    entries_out = _entries(repo, drafts, attribution, only_pr, changelog_keys)
    return records, entries_out


@dataclass(frozen=True, slots=True)
class KeyExtraction:
    """What ingest's extractor builds for one config key at one commit, before
    attribution: the records (without ``history``), the points it skipped and why,
    and the problems it met."""

    records: tuple[EvidenceRecord, ...]
    skipped: tuple[SkipCount, ...]
    warnings: tuple[str, ...]


def extract_key(repo: Repo, commit: Commit, config_key: str) -> KeyExtraction:
    """The records of ``config_key`` at ``commit``, by the extractor ingest uses.

    No attribution: nothing walks history, so ``commit`` need not be on any branch
    the repository's history reaches (a PR head does). Objects the repository lacks
    raise :class:`~provenance.sources.git.MissingObjectError`.
    """
    snapshot = Snapshot(repo, commit)
    summary = IngestSummary()

    def only(key: str, _raw: Any) -> bool:
        return key == config_key

    def prefilter(key: str, _prefix: str | None) -> bool:
        return key == config_key

    masters = load_master_configs(snapshot, wanted=only, prefilter=prefilter)
    extraction = _Extractor(snapshot, summary, None).run(list(masters.entries))
    records = tuple(d.record for d in _collapse(extraction.drafts))
    return KeyExtraction(
        records=records,
        skipped=tuple(summary.skipped),
        warnings=(*masters.warnings, *summary.warnings),
    )


def _finish(summary: IngestSummary, records: list[EvidenceRecord]) -> None:
    summary.records = len(records)
    summary.partial_records = sum(1 for r in records if r.partial)
    counts: dict[str, int] = {}
    for record in records:
        for construct in {m.construct_name for m in record.partial}:
            counts[construct] = counts.get(construct, 0) + 1
    summary.partial_by_construct = dict(sorted(counts.items()))
    summary.unresolved_scripts = sorted(set(summary.unresolved_scripts))
    summary.skipped.sort(key=lambda item: (item.code, item.framework))
    summary.warnings = sorted(set(summary.warnings))


def _cached_or_extract(
    repo: Repo,
    commit: Commit,
    model_prefix: str | None,
    keys: str | None,
    only_pr: int | None,
    progress: Progress | None,
    cache: ExtractionCache | None,
    shared: _Shared,
) -> tuple[list[EvidenceRecord], list[LedgerEntry], IngestSummary]:
    """:func:`_ingest_commit`'s result, from ``cache`` when it holds it (then stored there)."""
    sha = str(commit.hexsha)
    key = None
    if cache is not None:
        key = cache_key(commit=sha, model_prefix=model_prefix, keys=keys, pr=only_pr)
        cached = cache.load(key, CachedExtraction)
        if cached is not None:
            problem = cached.problem(sha, only_pr)
            if problem is None:
                entries = [_with_head(e, pr_head(repo, e.pr.number)) for e in cached.entries]
                return cached.records, entries, cached.summary
            cache.reject(key, problem)
    summary = IngestSummary()
    records, entries = _ingest_commit(
        repo, commit, model_prefix, keys, only_pr, summary, progress, shared
    )
    if cache is not None and key is not None:
        cache.store(
            key,
            CachedExtraction(
                format=CACHE_FORMAT, key=key, records=records, entries=entries, summary=summary
            ),
        )
    return records, entries, summary


@dataclass
class _Worker:
    """One process's repository, first-parent line and extraction cache."""

    repo_path: Path
    repo: Repo
    shared: _Shared
    cache_root: Path | None


_WORKER: list[_Worker] = []  # the pool worker's state (set by :func:`_start_worker`)


def _open_worker(repo_path: Path, rev: str, cache_root: Path | None) -> _Worker:
    repo = open_repo(repo_path)
    tip = resolve_commit(repo, rev)
    # one history walk for every commit this process extracts
    return _Worker(repo_path, repo, _Shared(Lineage.of(repo, tip.hexsha)), cache_root)


def _start_worker(repo_path: Path, rev: str, cache_root: Path | None) -> None:
    _WORKER[:] = [_open_worker(repo_path, rev, cache_root)]


@dataclass
class _CommitResult:
    records: list[EvidenceRecord]
    entries: list[LedgerEntry]
    summary: IngestSummary
    cache_hits: int = 0
    cache_misses: int = 0
    cache_warnings: list[str] = field(default_factory=list)


def _extract_target(
    worker: _Worker,
    sha: str,
    number: int | None,
    model_prefix: str | None,
    keys: str | None,
    progress: Progress | None,
) -> _CommitResult:
    cache = ExtractionCache(worker.cache_root) if worker.cache_root is not None else None
    records, entries, summary = _cached_or_extract(
        worker.repo,
        worker.repo.commit(sha),
        model_prefix,
        keys,
        number,
        progress,
        cache,
        worker.shared,
    )
    if cache is None:
        return _CommitResult(records, entries, summary)
    return _CommitResult(records, entries, summary, cache.hits, cache.misses, cache.warnings)


def _pooled_target(
    sha: str, number: int | None, model_prefix: str | None, keys: str | None
) -> _CommitResult:
    return _extract_target(_WORKER[0], sha, number, model_prefix, keys, None)


def _results(
    worker: _Worker,
    targets: list[tuple[str, int | None]],
    model_prefix: str | None,
    keys: str | None,
    jobs: int,
    progress: Progress | None,
) -> Iterator[_CommitResult]:
    """Each target's extraction, in ``targets`` order whatever order the workers finish in.

    One target: in this process, with point-by-point progress. Several: a pool of
    ``jobs`` processes, progress counting commits.
    """
    if len(targets) == 1 or jobs <= 1:
        for done, (sha, number) in enumerate(targets, start=1):
            point_progress = progress if len(targets) == 1 else None
            yield _extract_target(worker, sha, number, model_prefix, keys, point_progress)
            if progress is not None and len(targets) > 1:
                progress(done, len(targets), _target_label(sha, number))
        return
    context = multiprocessing.get_context("spawn")  # no forked git handles
    init = (worker.repo_path, worker.shared.lineage.tip, worker.cache_root)
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=init
    ) as pool:
        futures = {
            pool.submit(_pooled_target, sha, number, model_prefix, keys): index
            for index, (sha, number) in enumerate(targets)
        }
        finished: dict[int, _CommitResult] = {}
        for done, future in enumerate(as_completed(futures), start=1):
            index = futures[future]
            finished[index] = future.result()
            if progress is not None:
                progress(done, len(targets), _target_label(*targets[index]))
        for index in range(len(targets)):
            yield finished[index]


def _target_label(sha: str, number: int | None) -> str:
    return f"#{number} {sha[:12]}" if number is not None else sha[:12]


def extract(
    repo_path: Path,
    rev: str,
    model_prefix: str | None,
    keys: str | None,
    prs: list[int],
    *,
    progress: Progress | None = None,
    cache: ExtractionCache | None = None,
    jobs: int = 1,
) -> IngestResult:
    """Evidence records and PR ledger entries of an InferenceX repository (see module doc).

    With ``cache``, each commit's extraction is looked up there first and stored
    there after (see :mod:`provenance.store.extraction_cache`); the result is
    the same either way. With several ``prs`` and ``jobs`` > 1 the commits are
    extracted by a pool of ``jobs`` processes; the result does not depend on it.
    A killed run loses only the commits in flight: the others are in the cache.
    """
    worker = _open_worker(repo_path, rev, cache.root if cache is not None else None)
    summary = IngestSummary()
    records: dict[str, EvidenceRecord] = {}
    entries: dict[int, LedgerEntry] = {}
    targets: list[tuple[str, int | None]]
    if prs:
        history = worker.shared.lineage.history
        targets = [(require_pr_commit(history, n, rev).sha, n) for n in prs]
    else:
        targets = [(worker.shared.lineage.tip, None)]
    for result in _results(worker, targets, model_prefix, keys, jobs, progress):
        summary.absorb(result.summary)
        records.update((r.id, r) for r in result.records)
        entries.update((e.pr.number, e) for e in result.entries)
        if cache is not None:
            cache.hits += result.cache_hits
            cache.misses += result.cache_misses
            cache.warnings.extend(result.cache_warnings)
    if cache is not None:
        summary.warnings.extend(cache.warnings)
    ordered = [records[k] for k in sorted(records)]
    _finish(summary, ordered)
    return IngestResult(
        records=ordered,
        entries=[entries[n] for n in sorted(entries)],
        summary=summary,
    )
