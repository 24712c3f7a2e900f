"""The point extractor: draft evidence records for the master-config entries of one snapshot.

:class:`PointExtractor` evaluates every search-space point of the entries it is
given (single-node launchers, srt-slurm recipes, AMD vllm-disagg chains) and
builds one draft record per point; :func:`collapse` merges drafts identical
apart from their workloads. It reads one commit and walks no history:
attribution (``attribution.py``) and the ingest plan (``ingest.py``) do that.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from provenance.errors import InputError
from provenance.evidence.inferencex.amd_disagg import (
    NotUnderstoodError,
    is_amd_vllm_disagg,
    read_point,
)
from provenance.evidence.inferencex.content_trace import (
    point_key,
)
from provenance.evidence.inferencex.history import (
    HistoryCommit,
)
from provenance.evidence.inferencex.master import (
    MasterEntry,
    MultiNodePoint,
    SingleNodePoint,
    load_master_configs,
)
from provenance.evidence.inferencex.multinode_launchers import (
    is_llmd,
    llmd_recipe_path,
    llmd_skip,
    without_config_file_skip,
)
from provenance.evidence.inferencex.recipe_overlay import follow_overlays, runner_overlays
from provenance.evidence.inferencex.scripts import (
    ArgvNotNormalisableError,
    ScriptResolution,
    evaluate_point,
    resolve_script,
)
from provenance.evidence.inferencex.skips import (
    SkipCode,
    SkipCount,
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
from provenance.evidence.inferencex.summary import IngestSummary
from provenance.model.flags import FlagSet
from provenance.model.ledger import INFERENCEX_REPO
from provenance.model.record import (
    ConditionalFlags,
    EvidenceRecord,
    EvidenceSource,
    PartialMarker,
    RoleTopology,
    SourceFile,
    SourceFileKind,
    Topology,
    WorkloadPoint,
)
from provenance.sources.git import Commit, MissingObjectError, Repo

#: progress(done, total, what)
Progress = Callable[[int, int, str], None]


@dataclass
class Draft:
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
class Extraction:
    drafts: list[Draft] = field(default_factory=list)
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


def _source(snapshot: Snapshot, files: Iterable[tuple[str, SourceFileKind]]) -> EvidenceSource:
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


@dataclass(frozen=True)
class PrScope:
    """What PR N's merge changed (``--pr`` pre-filter): the config keys it changed or its
    changelog entry names, and the paths it changed. Only points these can touch are
    evaluated; the others cannot be N's records."""

    keys: frozenset[str]
    paths: frozenset[str]

    def covers(self, key: str, path: str) -> bool:
        return key in self.keys or path in self.paths

    def may_overlay(self, key: str, plain: str, config_path: str) -> bool:
        """Whether a point whose plain srt-slurm lookup is ``plain`` can be in scope once
        the runner launcher's overlay copies are followed (without evaluating them).

        A copy makes ``DST/x`` read as ``SRC/x``: the file read keeps the config
        path's name, and the runner launcher joins the record's files only when a
        copy decided. So a point is out of scope when neither its key, its plain
        path, any changed file of that name, nor any runner launcher changed.
        """
        if self.covers(key, plain) or self._runner_changed:
            return True
        return posixpath.basename(config_path) in self._names

    @cached_property
    def _names(self) -> frozenset[str]:
        """The file names of the changed paths (asked once per multinode point)."""
        return frozenset(posixpath.basename(p) for p in self.paths)

    @cached_property
    def _runner_changed(self) -> bool:
        return any(p.startswith("runners/") for p in self.paths)


class PointExtractor:
    """Builds draft records for the config entries of one snapshot."""

    def __init__(
        self,
        snapshot: Snapshot,
        summary: IngestSummary,
        progress: Progress | None,
        relevant: PrScope | None = None,
        removed_by: Callable[[str], HistoryCommit | None] | None = None,
    ):
        self.snapshot = snapshot
        # path -> the earlier commit that removed it (None: never in the tree)
        self.removed_by = removed_by
        self.summary = summary
        self.progress = progress
        # what a ``--pr`` merge changed (None: every point is in scope)
        self.relevant = relevant
        self._resolutions: dict[tuple[str, str, str, str], ScriptResolution] = {}
        self._recipes: dict[str, SrtRecipe | SkipCode] = {}

    def run(self, entries: list[MasterEntry]) -> Extraction:
        out = Extraction()
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
        files: list[tuple[str, SourceFileKind]],
        topology: Topology,
        roles: dict[str, FlagSet],
        partial: Iterable[PartialMarker],
        conditional: ConditionalFlags | None = None,
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
            conditional={r: keys for r, keys in (conditional or {}).items() if keys},
        )

    def _consider(self, key: str, path: str, *more: str) -> bool:
        """Whether a point is in scope (the ``--pr`` pre-filter); counts the ones that are."""
        relevant = self.relevant
        if relevant is not None and not any(relevant.covers(key, p) for p in (path, *more)):
            return False
        self.summary.points += 1
        return True

    # single node ---------------------------------------------------------------------
    def _single(self, entry: MasterEntry, point: SingleNodePoint, out: Extraction) -> None:
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
        files: list[tuple[str, SourceFileKind]] = [
            (entry.path, "master-config"),
            (evidence.script, "launcher"),
        ]
        if resolution.launcher:
            files.append((resolution.launcher, "other"))
        record = self._record(
            entry,
            files,
            _single_topology(point),
            {"serve": evidence.flags},
            evidence.partial,
            {"serve": evidence.conditional},
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
            Draft(
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

    def _amd_disagg(self, entry: MasterEntry, point: MultiNodePoint, out: Extraction) -> None:
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
        files: list[tuple[str, SourceFileKind]] = [(entry.path, "master-config")]
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
            Draft(
                record,
                workloads,
                evidence.attributed(),
                entry.path,
                entry.archived,
                entry.model_prefix,
                {point_key(entry, point)},
            )
        )

    def _multi(self, entry: MasterEntry, point: MultiNodePoint, out: Extraction) -> None:
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
        config_path = config_file.partition(":")[0]
        if self.relevant is not None and not self.relevant.may_overlay(
            entry.key, path, config_path
        ):
            return  # out of scope whatever the overlay says: not evaluated
        lookup = follow_overlays(
            self.snapshot,
            runner_overlays(self.snapshot, entry, point),
            config_path,
            path,
            origin=origin,
        )
        path = lookup.path
        runner = [lookup.runner_launcher] if lookup.runner_launcher else []
        if not self._consider(entry.key, path, *runner):
            return
        recipe = self._recipe(path)
        if isinstance(recipe, str):
            self._skip(recipe, entry)
            return
        partial = [*recipe.partial, *lookup.partial]
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
            [
                (entry.path, "master-config"),
                (path, "srt-slurm-recipe"),
                *((r, "other") for r in runner),
            ],
            recipe.topology,
            {name: role.flags for name, role in recipe.roles.items()},
            partial,
        )
        workloads = _workload_points(point)
        out.drafts.append(
            Draft(
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


def collapse(drafts: list[Draft]) -> list[Draft]:
    """Merge drafts whose records are identical apart from workloads."""
    groups: dict[str, Draft] = {}
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


@dataclass(frozen=True, slots=True)
class KeyExtraction:
    """What ingest's extractor builds for one config key at one commit, before
    attribution: the records (without ``history``), the points it skipped and why,
    and the problems it met; for each record (same order), the files whose content
    decides its served commands (:attr:`Draft.attributed_files`)."""

    records: tuple[EvidenceRecord, ...]
    skipped: tuple[SkipCount, ...]
    warnings: tuple[str, ...]
    attributed: tuple[tuple[str, ...], ...] = ()


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
    extraction = PointExtractor(snapshot, summary, None).run(list(masters.entries))
    drafts = collapse(extraction.drafts)
    return KeyExtraction(
        records=tuple(d.record for d in drafts),
        attributed=tuple(tuple(d.attributed_files) for d in drafts),
        skipped=tuple(summary.skipped),
        warnings=(*masters.warnings, *summary.warnings),
    )
