"""InferenceX master configs: config keys and every search-space point, at any commit.

The master configs moved twice (spec §1.1): ``.github/configs/*-master.yaml``
until #1992, ``configs/{nvidia,amd}-master.yaml`` since, and archived keys in
``configs/deprecated/*.yaml`` since #2493. :func:`load_master_configs` reads
every location present in the commit's tree, so archived keys are found too.

Search spaces expand exactly as InferenceX's sweep generator does (spec §1.5):
single-node rows get one point per concurrency (``conc-list`` or the
``conc-start``..``conc-end`` range doubling each step, clamped to the end,
inclusive); multinode rows keep the whole concurrency list in one point.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from provenance.errors import InputError
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.safe_yaml import LoadedYaml, load_yaml_bytes, load_yaml_text, parse_model

ACTIVE_MASTER_PATHS = ("configs/nvidia-master.yaml", "configs/amd-master.yaml")
LEGACY_MASTER_PATHS = (".github/configs/nvidia-master.yaml", ".github/configs/amd-master.yaml")
DEPRECATED_MASTER_DIR = "configs/deprecated"
#: Where archived master configs lived before InferenceX#1992 moved ``.github/configs`` to
#: ``configs`` (InferenceX#1874 archived MiniMax-M2.5 there).
LEGACY_DEPRECATED_MASTER_DIR = ".github/configs/deprecated"
DEPRECATED_MASTER_DIRS = (DEPRECATED_MASTER_DIR, LEGACY_DEPRECATED_MASTER_DIR)

#: InferenceX runner hardware tokens that are recipes taxonomy hardware ids.
KNOWN_HARDWARE = frozenset(
    {"h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x"}
)

Scenario = Literal["fixed-seq-len", "agentic-coding"]
SCENARIOS: tuple[Scenario, ...] = ("fixed-seq-len", "agentic-coding")
CONC_STEP = 2


def hardware_of_runner(runner: str) -> tuple[str, bool]:
    """Runner label → (recipes hardware id, known?). ``cluster:b300-nv`` → ``("b300", True)``.

    An unknown label is returned verbatim with ``False``; it is never guessed.
    """
    label = runner.removeprefix("cluster:")
    token = label.split("-", 1)[0].split("_", 1)[0].lower()
    if token in KNOWN_HARDWARE:
        return token, True
    return runner, False


def expand_concurrency(start: int, end: int, step: int = CONC_STEP) -> list[int]:
    """``conc-start``..``conc-end``: multiply by ``step``, clamp to ``end``, inclusive."""
    if start <= 0 or step <= 1:
        raise ValueError("concurrency range needs a positive start and a step > 1")
    values: list[int] = []
    conc = start
    while conc <= end:
        values.append(conc)
        if conc == end:
            break
        conc *= step
        conc = min(conc, end)
    return values


# --- raw schema (kebab-case aliases, lenient about keys added over history) ---------


class _Raw(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class _RawConcRange(_Raw):
    conc_list: list[int] | None = Field(default=None, alias="conc-list")
    conc_start: int | None = Field(default=None, alias="conc-start")
    conc_end: int | None = Field(default=None, alias="conc-end")
    spec_decoding: str = Field(default="none", alias="spec-decoding")
    kv_offloading: str | None = Field(default=None, alias="kv-offloading")
    kv_offload_backend: dict[str, Any] | str | None = Field(
        default=None, alias="kv-offload-backend"
    )

    def concurrencies(self) -> list[int]:
        if self.conc_list is not None:
            return list(self.conc_list)
        if self.conc_start is not None and self.conc_end is not None:
            return expand_concurrency(self.conc_start, self.conc_end)
        raise ValueError("needs conc-list or conc-start and conc-end")


class _RawSingleSpace(_RawConcRange):
    tp: int
    ep: int = 1
    dp_attn: bool = Field(default=False, alias="dp-attn")
    pp: int = 1
    dcp_size: int = Field(default=1, alias="dcp-size")
    pcp_size: int = Field(default=1, alias="pcp-size")


class _RawWorker(_Raw):
    num_worker: int = Field(alias="num-worker")
    tp: int
    ep: int = 1
    dp_attn: bool = Field(default=False, alias="dp-attn")
    pp: int = 1
    dcp_size: int = Field(default=1, alias="dcp-size")
    pcp_size: int = Field(default=1, alias="pcp-size")
    hardware: str | None = None
    additional_settings: list[str] = Field(default_factory=list, alias="additional-settings")


class _RawMultiSpace(_RawConcRange):
    prefill: _RawWorker | None = None
    decode: _RawWorker | None = None


class _RawScenario(_Raw):
    isl: int = 0
    osl: int = 0
    dram_utilization: float | None = Field(default=None, alias="dram-utilization")
    trace_source: str | None = Field(default=None, alias="trace-source")
    search_space: list[dict[str, Any]] = Field(alias="search-space")


class _RawEntry(_Raw):
    image: str
    model: str
    model_prefix: str = Field(alias="model-prefix")
    runner: str
    precision: str
    framework: str
    multinode: bool = False
    disagg: bool = False
    scenarios: dict[str, list[_RawScenario]] | None = None
    seq_len_configs: list[_RawScenario] | None = Field(default=None, alias="seq-len-configs")


# --- public models -----------------------------------------------------------------


class SingleNodePoint(BaseModel):
    """One single-node benchmark row: one concurrency of one search-space entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: Scenario
    isl: int
    osl: int
    tp: int
    ep: int = 1
    dp_attn: bool = False
    pp: int = 1
    dcp_size: int = 1
    pcp_size: int = 1
    conc: int
    spec_decoding: str = "none"
    kv_offloading: str | None = None
    kv_offload_backend: str | None = None
    dram_utilization: float | None = None
    line: int | None = None

    @property
    def max_model_len(self) -> int:
        return self.isl + self.osl + 256 if self.scenario == "fixed-seq-len" else 0


class WorkerSpec(BaseModel):
    """One role of a multinode point as the master config labels it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_worker: int
    tp: int
    ep: int = 1
    dp_attn: bool = False
    pp: int = 1
    dcp_size: int = 1
    pcp_size: int = 1
    hardware: str | None = None
    additional_settings: tuple[tuple[str, str], ...] = ()

    def setting(self, name: str) -> str | None:
        for key, value in self.additional_settings:
            if key == name:
                return value
        return None

    def label(self) -> dict[str, Any]:
        return {
            "num_worker": self.num_worker,
            "tp": self.tp,
            "ep": self.ep,
            "dp_attn": self.dp_attn,
        }


class MultiNodePoint(BaseModel):
    """One multinode row: a search-space entry with its whole concurrency list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: Scenario
    isl: int
    osl: int
    concs: tuple[int, ...]
    spec_decoding: str = "none"
    prefill: WorkerSpec | None = None
    decode: WorkerSpec | None = None
    kv_offloading: str | None = None
    line: int | None = None

    def config_file(self) -> str | None:
        """``CONFIG_FILE`` from either role's ``additional-settings`` (prefill first)."""
        for worker in (self.prefill, self.decode):
            if worker is not None:
                value = worker.setting("CONFIG_FILE")
                if value is not None:
                    return value
        return None


class MasterEntry(BaseModel):
    """One config key of a master config."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    path: str
    line: int | None
    blob_sha: str
    image: str
    model: str
    model_prefix: str
    runner: str
    hardware: str
    hardware_known: bool
    precision: str
    framework: str
    multinode: bool
    disagg: bool
    single_points: tuple[SingleNodePoint, ...] = ()
    multi_points: tuple[MultiNodePoint, ...] = ()

    @property
    def archived(self) -> bool:
        return is_archived_master_path(self.path)


class MasterConfigs(BaseModel):
    """Every config key found at one commit, plus the problems met while reading them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: str
    files: dict[str, str]
    entries: tuple[MasterEntry, ...]
    warnings: tuple[str, ...] = ()

    def keys(self) -> list[str]:
        return sorted({entry.key for entry in self.entries})

    def by_key(self, key: str) -> list[MasterEntry]:
        return [entry for entry in self.entries if entry.key == key]


def master_paths(snapshot: Snapshot) -> list[str]:
    """Master config files present at the snapshot, active ones first.

    A master config (or its directory) committed as a symlink is refused with
    UnsafeInputError rather than skipped.
    """
    paths = [p for p in ACTIVE_MASTER_PATHS if snapshot.is_file(snapshot.safe_path(p))]
    paths += snapshot.list_files(DEPRECATED_MASTER_DIR, ".yaml")
    paths += [p for p in LEGACY_MASTER_PATHS if snapshot.is_file(snapshot.safe_path(p))]
    paths += snapshot.list_files(LEGACY_DEPRECATED_MASTER_DIR, ".yaml")
    return paths


def master_roots() -> tuple[str, ...]:
    """Every file or directory that can hold a master config, at any revision."""
    return (*ACTIVE_MASTER_PATHS, *LEGACY_MASTER_PATHS, *DEPRECATED_MASTER_DIRS)


def is_archived_master_path(path: str) -> bool:
    folder, _, name = path.rpartition("/")
    return folder in DEPRECATED_MASTER_DIRS and name.endswith(".yaml")


def is_master_path(path: str) -> bool:
    """A master config: an active or legacy file, or a YAML file in an archive directory."""
    if path in ACTIVE_MASTER_PATHS or path in LEGACY_MASTER_PATHS:
        return True
    return is_archived_master_path(path)


def _split_setting(
    text: str, loaded: LoadedYaml, key_path: tuple[str | int, ...]
) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise InputError(
            f"additional-settings item {text!r} is not KEY=VALUE",
            location=loaded.location(key_path),
        )
    return name.strip(), value.strip()


def _worker(
    raw: _RawWorker | None, loaded: LoadedYaml, key_path: tuple[str | int, ...]
) -> WorkerSpec | None:
    if raw is None:
        return None
    settings = tuple(
        _split_setting(str(item), loaded, (*key_path, "additional-settings", index))
        for index, item in enumerate(raw.additional_settings)
    )
    return WorkerSpec(
        num_worker=raw.num_worker,
        tp=raw.tp,
        ep=raw.ep,
        dp_attn=raw.dp_attn,
        pp=raw.pp,
        dcp_size=raw.dcp_size,
        pcp_size=raw.pcp_size,
        hardware=raw.hardware,
        additional_settings=settings,
    )


def _scenarios(raw: _RawEntry) -> Iterator[tuple[str, tuple[str | int, ...], _RawScenario]]:
    if raw.scenarios:
        for name, items in raw.scenarios.items():
            for index, item in enumerate(items):
                yield name, ("scenarios", name, index), item
    elif raw.seq_len_configs:
        for index, item in enumerate(raw.seq_len_configs):
            yield "fixed-seq-len", ("seq-len-configs", index), item


def _parse_space(
    model: type[_RawSingleSpace] | type[_RawMultiSpace],
    loaded: LoadedYaml,
    key_path: tuple[str | int, ...],
) -> Any:
    return parse_model(model, loaded, root=key_path)


def parse_entry(key: str, loaded: LoadedYaml, blob_sha: str) -> MasterEntry:
    """Validate one top-level entry; InputError names file:line (key path) on bad input."""
    raw = parse_model(_RawEntry, loaded, root=(key,))
    hardware, known = hardware_of_runner(raw.runner)
    singles: list[SingleNodePoint] = []
    multis: list[MultiNodePoint] = []
    for scenario_name, scenario_path, scenario in _scenarios(raw):
        if scenario_name not in SCENARIOS:
            raise InputError(
                f"unknown scenario {scenario_name!r}",
                location=loaded.location((key, *scenario_path)),
            )
        scen: Scenario = "agentic-coding" if scenario_name == "agentic-coding" else "fixed-seq-len"
        for index in range(len(scenario.search_space)):
            space_path = (key, *scenario_path, "search-space", index)
            line = loaded.line_of(space_path)
            try:
                if raw.multinode:
                    multi: _RawMultiSpace = _parse_space(_RawMultiSpace, loaded, space_path)
                    concs = tuple(multi.concurrencies())
                    multis.append(
                        MultiNodePoint(
                            scenario=scen,
                            isl=scenario.isl,
                            osl=scenario.osl,
                            concs=concs,
                            spec_decoding=multi.spec_decoding,
                            prefill=_worker(multi.prefill, loaded, (*space_path, "prefill")),
                            decode=_worker(multi.decode, loaded, (*space_path, "decode")),
                            kv_offloading=multi.kv_offloading,
                            line=line,
                        )
                    )
                else:
                    single: _RawSingleSpace = _parse_space(_RawSingleSpace, loaded, space_path)
                    raw_backend = single.kv_offload_backend
                    backend = (
                        raw_backend.get("name") if isinstance(raw_backend, dict) else raw_backend
                    )
                    for conc in single.concurrencies():
                        singles.append(
                            SingleNodePoint(
                                scenario=scen,
                                isl=scenario.isl,
                                osl=scenario.osl,
                                tp=single.tp,
                                ep=single.ep,
                                dp_attn=single.dp_attn,
                                pp=single.pp,
                                dcp_size=single.dcp_size,
                                pcp_size=single.pcp_size,
                                conc=conc,
                                spec_decoding=single.spec_decoding,
                                kv_offloading=single.kv_offloading,
                                kv_offload_backend=None if backend is None else str(backend),
                                dram_utilization=scenario.dram_utilization,
                                line=line,
                            )
                        )
            except ValueError as exc:
                raise InputError(str(exc), location=loaded.location(space_path)) from None
    return MasterEntry(
        key=key,
        path=loaded.path,
        line=loaded.line_of((key,)),
        blob_sha=blob_sha,
        image=raw.image,
        model=raw.model,
        model_prefix=raw.model_prefix,
        runner=raw.runner,
        hardware=hardware,
        hardware_known=known,
        precision=raw.precision,
        framework=raw.framework,
        multinode=raw.multinode,
        disagg=raw.disagg,
        single_points=tuple(singles),
        multi_points=tuple(multis),
    )


def _is_entry(value: object) -> bool:
    return isinstance(value, Mapping) and "image" in value and "model" in value


_TOP_KEY_LINE = re.compile(r"^([^\s#'\"][^:#]*|'[^']*'|\"[^\"]*\"):\s*(?:#.*)?$")
_PREFIX_LINE = re.compile(r"^\s+model-prefix:\s*['\"]?([^'\"#\s]+)")

#: ``prefilter(key, model_prefix_as_written)`` → keep the entry's text?
TextFilter = Callable[[str, "str | None"], bool]


def _continues_entry(line: str) -> bool:
    """A line after a top-level key that still belongs to its entry: blank, indented, or a
    comment, even one in column 0 (YAML ignores it; the entry's indented lines go on after)."""
    return not line or line[0].isspace() or line[0] == "#"


def narrow_text(text: str, keep: TextFilter) -> str | None:
    """``text`` with every top-level entry ``keep`` rejects blanked out, line numbers unchanged.

    A speed-up only: the YAML parser then skips blank lines instead of
    building entries nobody asked for, and the kept entries parse exactly as in
    ``text``. None when nothing would be blanked.
    """
    lines = text.split("\n")
    out: list[str] = []
    blanking = False
    changed = False
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _TOP_KEY_LINE.match(line) if line and not line[0].isspace() else None
        if match:
            end = index + 1
            while end < len(lines) and _continues_entry(lines[end]):
                end += 1
            prefix = None
            for body in lines[index + 1 : end]:
                found = _PREFIX_LINE.match(body)
                if found:
                    prefix = found.group(1)
                    break
            blanking = not keep(match.group(1).strip("'\""), prefix)
            changed = changed or blanking
            out.extend([""] * (end - index) if blanking else lines[index:end])
            index = end
            continue
        out.append(line)
        index += 1
    return "\n".join(out) if changed else None


def _load(raw: bytes, path: str, prefilter: TextFilter | None) -> LoadedYaml:
    if prefilter is not None:
        try:
            narrowed = narrow_text(raw.decode("utf-8"), prefilter)
        except UnicodeDecodeError:
            narrowed = None
        if narrowed is not None:
            try:
                return load_yaml_text(narrowed, path)
            except InputError:
                pass  # e.g. an alias to a blanked anchor: read the whole file
    return load_yaml_bytes(raw, path)


#: (file path, blob SHA) -> the entries and warnings that file gives (one filter pair).
FileKey = tuple[str, str]
FileResult = tuple[tuple[MasterEntry, ...], tuple[str, ...]]
FileResults = MutableMapping[FileKey, FileResult]


class RecentFiles(OrderedDict[FileKey, FileResult]):
    """:data:`FileResults` keeping the ``kept`` most recently used files only.

    Consecutive commits share most master-config files (the archives in
    ``configs/deprecated`` rarely change) while the active files change at
    nearly every PR: an unbounded map would keep every version's entries.
    """

    def __init__(self, kept: int = 32) -> None:
        super().__init__()
        self.kept = kept

    def get(self, key: FileKey, default: FileResult | None = None) -> FileResult | None:  # type: ignore[override]
        if key not in self:
            return default
        self.move_to_end(key)
        return self[key]

    def __setitem__(self, key: FileKey, value: FileResult) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.kept:
            self.popitem(last=False)


def load_master_configs(
    snapshot: Snapshot,
    *,
    wanted: Any = None,
    prefilter: TextFilter | None = None,
    reuse: FileResults | None = None,
) -> MasterConfigs:
    """Every config key at the snapshot's commit.

    A key may appear in several files (archived scenarios of a key live in
    ``configs/deprecated`` while its other scenarios stay active); each
    occurrence is its own :class:`MasterEntry`.

    ``wanted(key, raw_mapping) -> bool`` filters entries before they are
    validated (cheap key/prefix filters). An entry that fails validation is
    reported in ``warnings`` (with file:line) and skipped; a file that is not
    valid YAML raises InputError. ``prefilter`` (see :func:`narrow_text`) must
    keep at least every entry ``wanted`` keeps; it only saves parsing time.

    ``reuse`` keeps each file's result by (path, blob SHA) across calls — a
    file's entries depend on nothing else — and must only be shared by calls
    with the same ``wanted`` and ``prefilter``.
    """
    entries: list[MasterEntry] = []
    files: dict[str, str] = {}
    warnings: list[str] = []
    for path in master_paths(snapshot):
        raw = snapshot.read(path)
        sha = snapshot.blob_sha(path)
        if raw is None or sha is None:
            continue
        files[path] = sha
        found = reuse.get((path, sha)) if reuse is not None else None
        if found is None:
            found = file_entries(raw, path, sha, wanted, prefilter)
            if reuse is not None:
                reuse[(path, sha)] = found
        entries.extend(found[0])
        warnings.extend(found[1])
    return MasterConfigs(
        commit=snapshot.sha, files=files, entries=tuple(entries), warnings=tuple(warnings)
    )


def file_entries(
    raw: bytes, path: str, sha: str, wanted: Any, prefilter: TextFilter | None
) -> tuple[tuple[MasterEntry, ...], tuple[str, ...]]:
    """The entries of one master-config file and the warnings it gives."""
    loaded = _load(raw, path, prefilter)
    if loaded.data is None:
        return (), ()  # empty, or every entry filtered out
    if not isinstance(loaded.data, Mapping):
        return (), (f"{path}: not a mapping of config keys; skipped",)
    entries: list[MasterEntry] = []
    warnings: list[str] = []
    for key, value in loaded.data.items():
        if not _is_entry(value):
            continue
        key_text = str(key)
        if wanted is not None and not wanted(key_text, value):
            continue
        try:
            entries.append(parse_entry(key_text, loaded, sha))
        except (InputError, ValidationError) as exc:
            warnings.append(f"skipped config key {key_text!r}: {exc}")
    return tuple(entries), tuple(warnings)
