"""The PR audit's JSON (``provenance.diff/v4``): :func:`write_pr` and :func:`read_pr`.

A PR adding thousands of combinations has thousands of change groups, and v3 wrote each
group's reasons, nearest evidence, flag changes and feature choices in full: MiniMax-M3
#730 wrote 46 MB, 15 of the recipes history's PRs more than 10 MB. Those parts are few
and shared (#730: 10,062 groups, 429 distinct reasons, 1,617 nearest points, 72 feature
choices), so v4 writes each once, in ``tables``, and the groups and the lens name them
by index. Nothing is left out: :func:`read_pr` gives back the :class:`DiffReport` that
was written (docs/json-output.md, ``tests/report/test_pr_json.py``).

A module of its own so that the audit's JSON writer (:mod:`.json_report`, on the path
of every ``provenance audit --format json``) does not import the PR diff's models.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Annotated, Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic_core import to_json

from provenance.audit.verdicts import (
    EvidenceRef,
    FeatureChoice,
    NearestEvidence,
    PdPools,
    Reason,
    SelectionSet,
)
from provenance.model.combination import PdPool
from provenance.model.reasons import VerdictKind
from provenance.review.diff import (
    BlockReason,
    ChangeGroup,
    ChangeKind,
    DiffReport,
    FlagChanges,
    LensEntry,
    LensOccurrence,
    LensRole,
)

PR_SCHEMA: Literal["provenance.diff/v4"] = "provenance.diff/v4"

_TABLE = ConfigDict(frozen=True, extra="forbid")


class PrShape(BaseModel):
    """The deployment shape of a selection set: every field of
    :class:`~provenance.audit.verdicts.SelectionSet` but ``features`` and ``pd``."""

    model_config = _TABLE

    variant: str
    hardware: str
    strategy: str | None
    node_count: int | None
    kv_offload: str | None = None
    kv_instances: int | None = None
    omni_task: str | None = None


class PrFlag(BaseModel):
    """One major flag of one role set to one value."""

    model_config = _TABLE

    role: str
    key: str
    value: str


class PrPools(BaseModel):
    """Every pairing of ``pools[i]`` for each ``prefill`` with each ``decode``."""

    model_config = _TABLE

    prefill: tuple[Annotated[int, Field(ge=0)], ...]
    decode: tuple[Annotated[int, Field(ge=0)], ...]


class PrSelectionSet(BaseModel):
    """A selection set: ``shapes[shape]`` × ``features[i]`` for each ``i`` × the PD pools
    (``len(features) × len(pd.prefill) × len(pd.decode)`` combinations)."""

    model_config = _TABLE

    shape: int = Field(ge=0)
    features: tuple[Annotated[int, Field(ge=0)], ...]
    pd: PrPools | None = None


class PrTables(BaseModel):
    """What the change groups and the lens share, each part once; they name a part by
    its index (from 0) in its table."""

    model_config = _TABLE

    sets: tuple[PrSelectionSet, ...] = ()
    shapes: tuple[PrShape, ...] = ()
    features: tuple[FeatureChoice, ...] = ()
    pools: tuple[PdPool, ...] = ()
    flags: tuple[PrFlag, ...] = ()
    reasons: tuple[Reason, ...] = ()
    nearest: tuple[NearestEvidence, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()


class PrFlagChanges(BaseModel):
    """The major-flag changes of a group, as indexes into ``flags``: ``changed`` holds
    ``[before, after]`` pairs of the same role and key."""

    model_config = _TABLE

    added: tuple[Annotated[int, Field(ge=0)], ...] = ()
    changed: tuple[tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]], ...] = ()
    removed: tuple[Annotated[int, Field(ge=0)], ...] = ()


class PrChangeGroup(BaseModel):
    """:class:`~provenance.review.diff.ChangeGroup` with its shared parts as indexes."""

    model_config = _TABLE

    recipe: str
    combinations: int
    selections: tuple[Annotated[int, Field(ge=0)], ...]
    kind: ChangeKind
    base_verdict: VerdictKind | None = None
    head_verdict: VerdictKind | None = None
    flags: PrFlagChanges = PrFlagChanges()
    blocking: bool = False
    block_reason: BlockReason | None = None
    unbenchmarked: bool = False
    reasons: tuple[Annotated[int, Field(ge=0)], ...] = ()
    nearest: tuple[Annotated[int, Field(ge=0)], ...] = ()
    declared_by: str | None = None


class PrLensRole(BaseModel):
    model_config = _TABLE

    role: str
    evidence: tuple[Annotated[int, Field(ge=0)], ...] = ()


class PrLensOccurrence(BaseModel):
    model_config = _TABLE

    recipe: str
    verdict: VerdictKind
    combinations: int
    selections: tuple[Annotated[int, Field(ge=0)], ...]
    roles: tuple[PrLensRole, ...]


class PrLensEntry(BaseModel):
    model_config = _TABLE

    key: str
    value: str
    evidenced: int
    unevidenced: int
    occurrences: tuple[PrLensOccurrence, ...]


#: the fields of :class:`DiffReport` that v4 writes differently (the rest as they are)
_PR_REWRITTEN = ("schema_", "changes", "lens")


def _pr_model() -> type[BaseModel]:
    """The ``provenance.diff/v4`` document: :class:`DiffReport`'s fields, in its order,
    but for ``schema``, ``changes`` and ``lens``, and ``tables`` before ``changes``."""
    fields: dict[str, Any] = {}
    for name, info in DiffReport.model_fields.items():
        if name == "schema_":
            fields[name] = (Literal["provenance.diff/v4"], Field(default=PR_SCHEMA, alias="schema"))
        elif name == "changes":
            fields["tables"] = (PrTables, PrTables())
            fields[name] = (tuple[PrChangeGroup, ...], ())
        elif name == "lens":
            fields[name] = (tuple[PrLensEntry, ...], ())
        else:
            fields[name] = (info.annotation, info)
    model: type[BaseModel] = create_model(
        "PrDiffReport",
        __config__=ConfigDict(frozen=True, extra="forbid", populate_by_name=True),
        __doc__="The PR audit's JSON (provenance.diff/v4): a DiffReport whose change "
        "groups and lens name their shared parts by index into tables.",
        **fields,
    )
    return model


#: the ``provenance.diff/v4`` document (``provenance schema diff``)
PrDiffReport = _pr_model()


class _Interned:
    """One table being built: each distinct part once, in the order first met.

    Parts are looked up by ``id`` first (the diff shares them between groups: a cheap
    hit), then by their JSON text (equal parts that are distinct objects). The diff
    being written keeps every part alive meanwhile, so no ``id`` is reused.
    """

    def __init__(self, kind: type) -> None:
        self._adapter: TypeAdapter[Any] = TypeAdapter(kind)
        self.rows: list[Any] = []
        self._by_id: dict[int, int] = {}
        self._by_text: dict[bytes, int] = {}

    def __call__(self, part: Any) -> int:
        found = self._by_id.get(id(part))
        if found is None:
            text = self._adapter.dump_json(part, by_alias=True)
            found = self._by_text.get(text)
            if found is None:
                found = self._by_text[text] = len(self.rows)
                self.rows.append(self._adapter.dump_python(part, mode="json", by_alias=True))
            self._by_id[id(part)] = found
        return found


class _PrEncoder:
    """Builds the v4 document of one diff, filling the tables as it goes."""

    def __init__(self) -> None:
        self.sets: list[dict[str, Any]] = []
        self._sets_by_id: dict[int, int] = {}
        self._sets_by_key: dict[tuple[Any, ...], int] = {}
        self.shapes: dict[tuple[Any, ...], int] = {}
        self.pools: dict[PdPool, int] = {}
        self.flags: dict[tuple[str, str, str], int] = {}
        self._flags_by_id: dict[int, dict[str, Any]] = {}
        self.features = _Interned(FeatureChoice)
        self.reasons = _Interned(Reason)
        self.nearest = _Interned(NearestEvidence)
        self.evidence = _Interned(EvidenceRef)

    def tables(self) -> dict[str, Any]:
        shapes = [dict(zip(_SHAPE_FIELDS, shape, strict=True)) for shape in self.shapes]
        flags = [{"role": r, "key": k, "value": v} for r, k, v in self.flags]
        pools = [{"nodes": p.nodes, "parallelism": p.parallelism} for p in self.pools]
        return {
            "sets": self.sets,
            "shapes": shapes,
            "features": self.features.rows,
            "pools": pools,
            "flags": flags,
            "reasons": self.reasons.rows,
            "nearest": self.nearest.rows,
            "evidence": self.evidence.rows,
        }

    def _flag(self, role: str, key: str, value: str) -> int:
        found = self.flags.get((role, key, value))
        if found is None:
            found = self.flags[(role, key, value)] = len(self.flags)
        return found

    def _pool(self, pool: PdPool) -> int:
        found = self.pools.get(pool)
        if found is None:
            found = self.pools[pool] = len(self.pools)
        return found

    def _set(self, selection_set: SelectionSet) -> int:
        """The index of the set in ``sets`` (a set held by a group and by the lens, or by
        several lens entries, is written once)."""
        head = _shape_key(selection_set)
        shape = self.shapes.get(head)
        if shape is None:
            shape = self.shapes[head] = len(self.shapes)
        features = [self.features(c) for c in selection_set.features]
        pd = selection_set.pd
        pools = None
        if pd is not None:
            pools = ([self._pool(p) for p in pd.prefill], [self._pool(p) for p in pd.decode])
        key = (
            shape,
            tuple(features),
            None if pools is None else (tuple(pools[0]), tuple(pools[1])),
        )
        found = self._sets_by_key.get(key)
        if found is None:
            written: dict[str, Any] = {"shape": shape, "features": features}
            if pools is not None:
                written["pd"] = {"prefill": pools[0], "decode": pools[1]}
            found = self._sets_by_key[key] = len(self.sets)
            self.sets.append(written)
        self._sets_by_id[id(selection_set)] = found
        return found

    def selection_sets(self, sets: Sequence[SelectionSet]) -> list[int]:
        by_id = self._sets_by_id.get
        return [found if (found := by_id(id(s))) is not None else self._set(s) for s in sets]

    def _flag_changes(self, flags: FlagChanges) -> dict[str, Any]:
        """A group's flag changes as indexes (remembered by ``id``: groups share them)."""
        flag = self._flag
        found = self._flags_by_id[id(flags)] = _present(
            {
                "added": [flag(r, k, v) for r, m in flags.added.items() for k, v in m.items()],
                "changed": [
                    [flag(r, k, old), flag(r, k, new)]
                    for r, m in flags.changed.items()
                    for k, (old, new) in m.items()
                ],
                "removed": [flag(r, k, v) for r, m in flags.removed.items() for k, v in m.items()],
            }
        )
        return found

    def change(self, group: ChangeGroup) -> dict[str, Any]:
        """The group's fields, each left out at its default (``blocking`` never: readers
        tell a blocking group by it)."""
        flags = self._flags_by_id.get(id(group.flags)) or self._flag_changes(group.flags)
        written = {
            "recipe": group.recipe,
            "combinations": group.combinations,
            "selections": self.selection_sets(group.selections),
            "kind": group.kind,
            "base_verdict": group.base_verdict,
            "head_verdict": group.head_verdict,
            "flags": flags,
            "blocking": group.blocking,
            "block_reason": group.block_reason,
            "unbenchmarked": group.unbenchmarked,
            "reasons": [self.reasons(r) for r in group.reasons],
            "nearest": [self.nearest(n) for n in group.nearest],
            "declared_by": group.declared_by,
        }
        return _present(written, keep="blocking")

    def lens(self, entry: LensEntry) -> dict[str, Any]:
        return {
            "key": entry.key,
            "value": entry.value,
            "evidenced": entry.evidenced,
            "unevidenced": entry.unevidenced,
            "occurrences": [
                {
                    "recipe": occ.recipe,
                    "verdict": occ.verdict,
                    "combinations": occ.combinations,
                    "selections": self.selection_sets(occ.selections),
                    "roles": [
                        {"role": role.role, "evidence": [self.evidence(e) for e in role.evidence]}
                        for role in occ.roles
                    ],
                }
                for occ in entry.occurrences
            ],
        }


def _present(fields: dict[str, Any], keep: str = "") -> dict[str, Any]:
    """``fields`` without those at their default (None, False, empty), but ``keep``."""
    return {
        name: value
        for name, value in fields.items()
        if name == keep or not (value is None or value is False or value == [] or value == {})
    }


_SHAPE_FIELDS = tuple(PrShape.model_fields)
_shape_key = attrgetter(*_SHAPE_FIELDS)


def pr_document(diff: DiffReport) -> dict[str, Any]:
    """The ``provenance.diff/v4`` document of ``diff``, as JSON-ready Python values."""
    encoder = _PrEncoder()
    changes = [encoder.change(group) for group in diff.changes]
    lens = [encoder.lens(entry) for entry in diff.lens]
    rest = diff.model_dump(mode="json", by_alias=True, exclude=set(_PR_REWRITTEN))
    document: dict[str, Any] = {"schema": PR_SCHEMA}
    for name, info in DiffReport.model_fields.items():
        if name == "changes":
            document["tables"] = encoder.tables()
            document["changes"] = changes
        elif name == "lens":
            document["lens"] = lens
        elif name != "schema_" and (info.alias or name) in rest:
            document[info.alias or name] = rest[info.alias or name]
    return document


def write_pr(diff: DiffReport, out: TextIO) -> None:
    """Write ``diff`` as ``provenance.diff/v4`` JSON and a newline."""
    out.write(to_json(pr_document(diff)).decode())
    out.write("\n")


def _sets(tables: PrTables, indexes: Sequence[int]) -> tuple[SelectionSet, ...]:
    out = []
    for i in indexes:
        written = tables.sets[i]
        pd = written.pd
        pools = None
        if pd is not None:
            pools = PdPools(
                prefill=tuple(tables.pools[p] for p in pd.prefill),
                decode=tuple(tables.pools[p] for p in pd.decode),
            )
        out.append(
            SelectionSet(
                **tables.shapes[written.shape].model_dump(),
                features=tuple(tables.features[f] for f in written.features),
                pd=pools,
            )
        )
    return tuple(out)


def _role_map(tables: PrTables, indexes: Sequence[int]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for i in indexes:
        flag = tables.flags[i]
        out.setdefault(flag.role, {})[flag.key] = flag.value
    return out


def _flag_changes(tables: PrTables, flags: PrFlagChanges) -> FlagChanges:
    changed: dict[str, dict[str, tuple[str, str]]] = {}
    for before, after in flags.changed:
        old, new = tables.flags[before], tables.flags[after]
        if (old.role, old.key) != (new.role, new.key):
            raise ValueError(f"flags.changed pairs {before} and {after}: not one role and key")
        changed.setdefault(old.role, {})[old.key] = (old.value, new.value)
    return FlagChanges(
        added=_role_map(tables, flags.added),
        changed=changed,
        removed=_role_map(tables, flags.removed),
    )


def read_pr(text: str | bytes) -> DiffReport:
    """The :class:`DiffReport` a ``provenance.diff/v4`` document says (an index out of
    its table raises ``IndexError``)."""
    document = PrDiffReport.model_validate_json(text)
    tables: PrTables = getattr(document, "tables")  # noqa: B009 (a created model)
    changes = tuple(
        ChangeGroup(
            recipe=g.recipe,
            kind=g.kind,
            base_verdict=g.base_verdict,
            head_verdict=g.head_verdict,
            flags=_flag_changes(tables, g.flags),
            reasons=tuple(tables.reasons[i] for i in g.reasons),
            nearest=tuple(tables.nearest[i] for i in g.nearest),
            declared_by=g.declared_by,
            blocking=g.blocking,
            block_reason=g.block_reason,
            unbenchmarked=g.unbenchmarked,
            combinations=g.combinations,
            selections=_sets(tables, g.selections),
        )
        for g in getattr(document, "changes")  # noqa: B009
    )
    lens = tuple(
        LensEntry(
            key=e.key,
            value=e.value,
            evidenced=e.evidenced,
            unevidenced=e.unevidenced,
            occurrences=tuple(
                LensOccurrence(
                    recipe=o.recipe,
                    verdict=o.verdict,
                    combinations=o.combinations,
                    selections=_sets(tables, o.selections),
                    roles=tuple(
                        LensRole(
                            role=r.role, evidence=tuple(tables.evidence[i] for i in r.evidence)
                        )
                        for r in o.roles
                    ),
                )
                for o in e.occurrences
            ),
        )
        for e in getattr(document, "lens")  # noqa: B009
    )
    kept = {
        name: getattr(document, name)
        for name in DiffReport.model_fields
        if name not in _PR_REWRITTEN
    }
    return DiffReport(**kept, changes=changes, lens=lens)
