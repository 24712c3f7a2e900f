"""Single-node launchers: which script runs for a config key, with which env (spec §2).

Routing (spec §2.4): the runner label of a config key maps to concrete
runners in ``configs/runners.yaml`` (``cluster:<fleet>`` names the fleet
directly); a concrete runner ``<fleet>_<n>`` runs ``runners/launch_<fleet>.sh``,
which composes the benchmark script path from the matrix env and takes the
first candidate that exists in the tree (framework-tagged name, then the
legacy name). Launchers differ (some only know the short form), so the
candidate templates are read from the launcher file at the commit being
evaluated — its ``benchmarks/...sh`` path templates in text order, with the
routing variables substituted — never from a fixed table. The launcher is
read, never run.

Archived config keys (``configs/deprecated``) cannot be routed by InferenceX
itself any more: their scripts moved to a ``deprecated/`` sibling directory.
When no candidate exists, the same names are tried there and the resolution
says so.

``SCENARIO_SUBDIR``, part of both the routing and the env, is the value
``benchmark-tmpl.yml`` gives it at that commit (:mod:`.workflow_env`): ``''``
for fixed-seq-len before the scripts moved to ``fixed_seq_len/``, that
directory since. The env a script receives is the one ``benchmark-tmpl.yml``
projects from the matrix row (spec §2.2), for the throughput run (``RUN_EVAL=false``,
``EVAL_ONLY=false``). ``MODEL_PATH`` is set by the runner launcher at run
time; it is given as ``/models/<checkpoint basename>``, a placeholder that the
flag normaliser canonicalises by basename.

The runner launcher of every fleet that runs the point's script is evaluated
too, with the same env (:mod:`provenance.evidence.bash.runner`): what it does on
its way to ``bash SCRIPT`` that changes the served ``vllm`` (an exported
function, ``PATH``, ``BASH_ENV``, ``SHELLOPTS``…) makes the record partial at
the runner's line, and the engine variables (``VLLM_*``) it passes are carried
into the record's env exactly. ``IS_MULTINODE`` is unset for these runs: the
single-node template does not give it (the multinode one sets it to ``true``).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from provenance.errors import InputError
from provenance.evidence.bash.config_file import merge_config_file
from provenance.evidence.bash.context import evaluate_in_context, runner_findings_for
from provenance.evidence.bash.launcher import ServedAlternative
from provenance.evidence.bash.runner import RunnerFindings, RunnerLauncher
from provenance.evidence.inferencex.dram_budget import dram_offload_gb
from provenance.evidence.inferencex.master import MasterEntry, SingleNodePoint
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.evidence.inferencex.workflow_env import SINGLE_NODE_TEMPLATE, scenario_subdirs
from provenance.model.flags import FlagSet
from provenance.model.record import ConditionalValue, PartialMarker, split_conditional
from provenance.normalise.canonical import normalise_argv
from provenance.safe_yaml import load_yaml_bytes

RUNNERS_PATHS = ("configs/runners.yaml", ".github/configs/runners.yaml")
#: The library launchers source; scanned for what its stand-in facts do not carry.
LIBRARY_PATH = "benchmarks/benchmark_lib.sh"
#: Workflow variables that differ for every point of a sweep and that runner launchers
#: read only to name result files: holes in the runner's evaluation (so that points
#: share it; measured: without this, one evaluation per point, +70% extraction time).
_PER_POINT = frozenset({"RESULT_FILENAME", "CONC"})
#: Names runner launchers branch on that other workflows set and the single-node
#: template (``benchmark-tmpl.yml``) leaves unset: ``IS_MULTINODE`` (the multinode
#: template), ``BENCH_SCRIPT_OVERRIDE`` (``speedbench-al.yml``).
SINGLE_NODE_UNSET = frozenset({"IS_MULTINODE", "BENCH_SCRIPT_OVERRIDE"})
#: The sweep generator's agentic DURATION (``DEFAULT_AGENTIC_DURATION_SECONDS``).
AGENTIC_DURATION_SECONDS = 3600
_TEMPLATE = re.compile(r"""benchmarks/[A-Za-z0-9_${}%*:./#-]*?\.sh""")
_ASSIGN = re.compile(
    r"""^\s*(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=(["']?)([^"'\s;]*)\2\s*$"""
)
#: The file name a ``source``/``.`` command names (the runner's helpers).
_SOURCED = re.compile(r"(?:^|[\s;&|(])(?:source|\.)\s+[^\n;]*?([\w.-]+\.sh)\b")
_VAR = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*)((?::-|%%|##|%|#)[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)"
)


class ArgvNotNormalisableError(InputError):
    """The flag normaliser refused the served argv (e.g. ``--config FILE``)."""


class ScriptResolution(BaseModel):
    """Where the launcher for one (config key, scenario, spec-decoding) lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str | None
    fleet: str | None
    launcher: str | None
    tried: tuple[str, ...] = ()
    via_deprecated: bool = False
    alternatives: tuple[str, ...] = ()
    reason: str | None = None
    #: The ``SCENARIO_SUBDIR`` the workflow gives this point and the path was found under.
    scenario_subdir: str = ""
    #: Why the workflow's ``SCENARIO_SUBDIR`` is not known (then nothing was looked for).
    subdir_unknown: str | None = None
    #: (fleet, runner launcher, ``SCENARIO_SUBDIR``) of every fleet that runs ``path``
    runners: tuple[tuple[str, str, str], ...] = ()


class ServeEvidence(BaseModel):
    """What a launcher serves for one point: normalised flags plus what could not be evaluated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    script: str
    blob_sha: str
    served: bool
    flags: FlagSet
    model: str | None
    partial: tuple[PartialMarker, ...]
    #: flags whose value depends on a run-time condition of the launcher (not in ``flags``)
    conditional: dict[str, ConditionalValue] = {}


def _yaml_data(raw: bytes, path: str) -> Any:
    return load_yaml_bytes(raw, path).data


def fleets_for_runner(snapshot: Snapshot, runner: str) -> list[str]:
    """Runner label → fleets (``b200`` → ``b200-cw``, ``b200-nb``, ``b200-dgxc``), in file order.

    Labels (``cluster:`` ones included) come from ``runners.yaml``; a label that
    is not listed there is itself a runner-name prefix (``b200-dgxc``).
    """
    for path in RUNNERS_PATHS:
        raw = snapshot.read(path)
        if raw is None:
            continue
        data = snapshot.memo(("yaml", path), functools.partial(_yaml_data, raw, path))
        labels = data.get("labels", data) if isinstance(data, Mapping) else {}
        names = labels.get(runner) if isinstance(labels, Mapping) else None
        if isinstance(names, list) and names:
            fleets: list[str] = []
            for name in names:
                fleet = str(name).rsplit("_", 1)[0]
                if fleet not in fleets:
                    fleets.append(fleet)
            return fleets
        break
    return [runner.removeprefix("cluster:")]


def _expand(template: str, variables: Mapping[str, str]) -> str | None:
    """Substitute ``${V}``, ``${V:-d}``, ``${V%%pat}`` …; None when a variable is unknown."""
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match.group(1) or match.group(3)
        op = match.group(2) or ""
        value = variables.get(name)
        if op.startswith(":-"):
            return value if value else op[2:]
        if value is None:
            unknown = True
            return ""
        if op.startswith("%%") and op[2:].endswith("*"):
            return value.split(op[2:-1], 1)[0] if op[2:-1] else ""
        if op:
            unknown = True
        return value

    result = _VAR.sub(replace, template)
    return None if unknown else result


def _launcher_variables(text: str, base: dict[str, str]) -> dict[str, str]:
    """Routing variables plus the launcher's own simple path assignments, expanded in order."""
    variables = dict(base)
    for line in text.split("\n"):
        match = _ASSIGN.match(line)
        if match is None or "$(" in match.group(3):
            continue
        name, value = match.group(1), match.group(3)
        if name in base:
            continue
        expanded = _expand(value, variables)
        if expanded is not None and ("benchmarks/" in expanded or name.endswith("BASE")):
            variables.setdefault(name, expanded)
    return variables


def script_candidates(launcher_text: str, routing: Mapping[str, str]) -> list[str]:
    """Single-node benchmark script paths a launcher composes, in text order."""
    return list(_script_candidates(launcher_text, tuple(routing.items())))


@functools.lru_cache(maxsize=4096)
def _script_candidates(launcher_text: str, routing: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """:func:`script_candidates`, once per launcher text and routing (points share them)."""
    variables = _launcher_variables(launcher_text, dict(routing))
    found: list[str] = []
    for line in launcher_text.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        # Quotes may split a path (``.../${SCENARIO_SUBDIR}"${EXP_NAME%%_*}_..."``);
        # a path can be spelt through a variable holding its base.
        expanded_line = line.replace('"', "").replace("'", "")
        for name, value in variables.items():
            if name.endswith("BASE") and "benchmarks/" in value:
                expanded_line = expanded_line.replace("${" + name + "}", value)
        for match in _TEMPLATE.finditer(expanded_line):
            path = _expand(match.group(0), variables)
            if path is None or path.startswith("benchmarks/multi_node/") or "${" in path:
                continue
            if path not in found:
                found.append(path)
    return tuple(found)


def routing_variables(entry: MasterEntry, point: SingleNodePoint, subdir: str) -> dict[str, str]:
    """The matrix env a runner launcher composes script paths from (``subdir``: the
    ``SCENARIO_SUBDIR`` of :func:`.workflow_env.scenario_subdirs`)."""
    spec = "_mtp" if point.spec_decoding == "mtp" else ""
    fw_suffix = "_trt" if entry.framework == "trt" else ""
    return {
        "SCENARIO_SUBDIR": subdir,
        "EXP_NAME": exp_name(entry, point),
        "MODEL_CODE": entry.model_prefix,
        "MODEL_PREFIX": entry.model_prefix,
        "PRECISION": entry.precision,
        "FRAMEWORK": entry.framework,
        "SPEC_SUFFIX": spec,
        "FRAMEWORK_SUFFIX": fw_suffix,
        "FW_SUFFIX": fw_suffix,
        "LEGACY_FW_SUFFIX": fw_suffix,
    }


def resolve_script(
    snapshot: Snapshot, entry: MasterEntry, point: SingleNodePoint
) -> ScriptResolution:
    """The launcher for ``entry`` at ``point``, resolved as the runner launchers do.

    ``SCENARIO_SUBDIR`` is the workflow's at this commit; when it can take several
    values (an input other than the scenario decides), each is tried in turn.
    """
    fleets = fleets_for_runner(snapshot, entry.runner)
    if not fleets:
        return ScriptResolution(
            path=None, fleet=None, launcher=None, reason=f"runner label {entry.runner!r} unknown"
        )
    subdirs = scenario_subdirs(snapshot, SINGLE_NODE_TEMPLATE, point.scenario)
    if isinstance(subdirs, str):
        return ScriptResolution(
            path=None, fleet=None, launcher=None, reason=subdirs, subdir_unknown=subdirs
        )
    results: list[ScriptResolution] = []
    for fleet in fleets:
        launcher = f"runners/launch_{fleet}.sh"
        raw = snapshot.read(launcher)
        if raw is None:
            results.append(
                ScriptResolution(
                    path=None, fleet=fleet, launcher=None, reason=f"{launcher} not in the tree"
                )
            )
            continue
        text = raw.decode("utf-8", "replace")
        found: ScriptResolution | None = None
        tried: list[str] = []
        for subdir in subdirs:
            candidates = script_candidates(text, routing_variables(entry, point, subdir))
            tried.extend(c for c in candidates if c not in tried)
            found = _first_existing(snapshot, launcher, candidates, fleet, subdir)
            if found is not None:
                break
        if found is not None:
            results.append(found.model_copy(update={"tried": tuple(tried)}))
            continue
        results.append(
            ScriptResolution(
                path=None,
                fleet=fleet,
                launcher=launcher,
                tried=tuple(tried),
                reason=f"{launcher} composes {_looked_for(tried)}; none exists"
                if tried
                else f"{launcher} composes no single-node script path",
            )
        )
    resolved = [r for r in results if r.path is not None]
    if not resolved:
        first = results[0]
        reasons = "; ".join(f"{r.fleet}: {r.reason}" for r in results)
        return first.model_copy(update={"reason": reasons})
    chosen_result = resolved[0]
    others = tuple(sorted({r.path for r in resolved if r.path and r.path != chosen_result.path}))
    runners = tuple(
        (r.fleet, r.launcher, r.scenario_subdir)
        for r in resolved
        if r.path == chosen_result.path and r.fleet and r.launcher
    )
    return chosen_result.model_copy(update={"alternatives": others, "runners": runners})


def _looked_for(tried: list[str]) -> str:
    """``a.sh, b.sh (and each in its deprecated/ sibling)``."""
    return ", ".join(tried) + " (and each in its deprecated/ sibling directory)"


def _first_existing(
    snapshot: Snapshot, launcher: str, candidates: list[str], fleet: str, subdir: str
) -> ScriptResolution | None:
    """The first candidate in the tree, else the first in a ``deprecated/`` sibling."""
    # safe_path refuses a candidate that escapes or is (under) a symlink.
    chosen = next(
        (c for c in candidates if snapshot.is_file(snapshot.safe_path(c, origin=launcher))),
        None,
    )
    via_deprecated = False
    if chosen is None:
        for candidate in candidates:
            moved = posixpath.join(
                posixpath.dirname(candidate), "deprecated", posixpath.basename(candidate)
            )
            if snapshot.is_file(snapshot.safe_path(moved, origin=launcher)):
                chosen, via_deprecated = moved, True
                break
    if chosen is None:
        return None
    return ScriptResolution(
        path=chosen,
        fleet=fleet,
        launcher=launcher,
        via_deprecated=via_deprecated,
        scenario_subdir=subdir,
    )


def exp_name(entry: MasterEntry, point: SingleNodePoint) -> str:
    if point.scenario == "agentic-coding":
        return f"{entry.model_prefix}_tp{point.tp}_conc{point.conc}"
    seq = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}.get(
        (point.isl, point.osl), f"{point.isl}_{point.osl}"
    )
    return f"{entry.model_prefix}_{seq}"


def launcher_env(
    entry: MasterEntry,
    point: SingleNodePoint,
    fleet: str | None,
    subdir: str,
    dram_gb: int | None = None,
) -> dict[str, str]:
    """The env ``benchmark-tmpl.yml`` gives the launcher for this matrix row (spec §2.2).

    ``subdir`` is the workflow's ``SCENARIO_SUBDIR`` (:func:`.workflow_env.scenario_subdirs`);
    ``dram_gb`` is the point's ``TOTAL_CPU_DRAM_GB`` (:mod:`.dram_budget`), None when unknown.
    """
    agentic = point.scenario == "agentic-coding"
    dp_attn = "true" if point.dp_attn else "false"
    runner_name = f"{fleet}_00" if fleet else entry.runner
    env = {
        "MODEL": entry.model,
        "MODEL_PREFIX": entry.model_prefix,
        "IMAGE": entry.image,
        "FRAMEWORK": entry.framework,
        "PRECISION": entry.precision,
        "ISL": str(point.isl),
        "OSL": str(point.osl),
        "MAX_MODEL_LEN": str(point.max_model_len),
        "TP": str(point.tp),
        "PP_SIZE": str(point.pp),
        "DCP_SIZE": str(point.dcp_size),
        "PCP_SIZE": str(point.pcp_size),
        "EP_SIZE": str(point.ep),
        "DP_ATTENTION": dp_attn,
        "CONC": str(point.conc),
        "SPEC_DECODING": point.spec_decoding,
        "DISAGG": "false",
        "RUN_EVAL": "false",
        "EVAL_ONLY": "false",
        "EXP_NAME": exp_name(entry, point),
        "SCENARIO_TYPE": point.scenario,
        "SCENARIO_SUBDIR": subdir,
        "IS_AGENTIC": "1" if agentic else "0",
        "RANDOM_RANGE_RATIO": "0.8",
        "GPU_COUNT": str(point.tp * point.pp * point.pcp_size),
        "RUNNER_NAME": runner_name,
        "RUNNER_TYPE": entry.runner,
        "PORT": "8888",
        "MODEL_PATH": "/models/" + entry.model.rstrip("/").rsplit("/", 1)[-1],
        "HF_HUB_CACHE": "/hf-hub-cache",
        "RESULT_DIR": "/workspace/results",
    }
    env["RESULT_FILENAME"] = (
        f"{env['EXP_NAME']}_{entry.precision}_{entry.framework}_tp{point.tp}-pp{point.pp}"
        f"-dcp{point.dcp_size}-pcp{point.pcp_size}-ep{point.ep}-dpa{dp_attn}_disagg-false"
        f"_spec-{point.spec_decoding}_conc{point.conc}_{runner_name}"
    )
    if agentic:
        if dram_gb is not None:
            env["TOTAL_CPU_DRAM_GB"] = str(dram_gb)
        env["DURATION"] = str(AGENTIC_DURATION_SECONDS)
        env["KV_OFFLOADING"] = point.kv_offloading or "none"
        if point.kv_offload_backend:
            env["KV_OFFLOAD_BACKEND"] = point.kv_offload_backend
    return env


def _context_file(snapshot: Snapshot, path: str | None) -> tuple[str, str] | None:
    """A file around a launcher (the library it sources) as (text, path); None when absent."""
    raw = snapshot.read(path) if path else None
    return (raw.decode("utf-8", "replace"), path) if raw is not None and path else None


def _tree_file(snapshot: Snapshot, ran: str | None = None) -> Callable[[str], bool | None]:
    """``[ -f PATH ]`` in the checkout at this commit (None: a symlink on the way);
    ``ran``: an archived script's path when it ran, before its move to ``deprecated/``."""

    def is_file(path: str) -> bool | None:
        if path == ran:
            return True
        try:
            return snapshot.is_file(snapshot.safe_path(path))
        except InputError:
            return None

    return is_file


def _runner_context(
    snapshot: Snapshot,
    entry: MasterEntry,
    point: SingleNodePoint,
    resolution: ScriptResolution,
    dram_gb: int | None,
    script: str,
) -> RunnerFindings:
    """What the runner launchers that run ``script`` for this point do to its run.

    Every fleet of the runner label that runs this script may run the point, so
    each one's runner is evaluated, with the env the workflow gives it: their
    markers are the record's; the engine env they pass must agree (else the
    record is partial and only what agrees is carried).
    """
    markers: list[PartialMarker] = []
    agreed: dict[str, str] | None = None
    for fleet, launcher, subdir in resolution.runners:
        text = _context_file(snapshot, launcher)
        if text is None:
            continue
        runner = RunnerLauncher(
            text[0],
            launcher,
            files=_tree_file(snapshot, script if resolution.via_deprecated else None),
            tree=snapshot.sha,
            unset=SINGLE_NODE_UNSET,
            helpers=_runner_helpers(snapshot, text[0]),
        )
        env = launcher_env(entry, point, fleet, subdir, dram_gb)
        findings = runner_findings_for(
            runner, {k: v for k, v in env.items() if k not in _PER_POINT}, script
        )
        markers.extend(findings.markers)
        passed = dict(findings.engine_env)
        if agreed is None:
            agreed = passed
        elif agreed != passed:
            names = sorted(
                k for k in agreed.keys() | passed.keys() if agreed.get(k) != passed.get(k)
            )
            markers.append(
                PartialMarker(
                    construct_name="fleet-dependent-env",
                    path=launcher,
                    detail=f"runners of {entry.runner!r} pass different {', '.join(names)[:120]}",
                )
            )
            agreed = {k: v for k, v in agreed.items() if passed.get(k) == v}
    return RunnerFindings(tuple(markers), agreed or {})


def _runner_helpers(snapshot: Snapshot, runner: str) -> tuple[tuple[str, str], ...]:
    """The files beside the runner launcher that it sources (``runners/slurm_utils.sh``),
    (path, text), to be followed; one that is absent or a symlink is left out (its
    ``source`` is then not followed, and marked)."""
    found: list[tuple[str, str]] = []
    for word in _SOURCED.findall(runner):
        path = posixpath.join("runners", word)
        try:
            text = _context_file(snapshot, path)
        except InputError:
            continue
        if text is not None and (path, text[0]) not in found:
            found.append((path, text[0]))
    return tuple(found)


def _ran_as(resolution: ScriptResolution) -> str:
    """The path the runner launcher ran the script by: an archived one's before its move."""
    path = resolution.path or ""
    if resolution.via_deprecated:
        directory = posixpath.dirname(posixpath.dirname(path))
        return posixpath.join(directory, posixpath.basename(path))
    return path


def evaluate_point(
    snapshot: Snapshot,
    entry: MasterEntry,
    point: SingleNodePoint,
    resolution: ScriptResolution,
) -> ServeEvidence:
    """Statically evaluate the resolved launcher for one point and normalise what it serves."""
    if resolution.path is None:
        raise ValueError("evaluate_point needs a resolved script")
    path = snapshot.safe_path(resolution.path)
    raw = snapshot.read(path)
    blob = snapshot.blob_sha(path)
    if raw is None or blob is None:
        raise InputError("launcher vanished from the tree", path=path)
    text = raw.decode("utf-8", "replace")
    partial: list[PartialMarker] = []
    dram_gb: int | None = None
    if point.scenario == "agentic-coding":
        budget = dram_offload_gb(snapshot, entry, point)
        if isinstance(budget, str):
            partial.append(
                PartialMarker(
                    construct_name="dram-budget",
                    path=path,
                    detail=f"TOTAL_CPU_DRAM_GB unknown: {budget}",
                )
            )
        else:
            dram_gb = budget
    result = evaluate_in_context(
        text,
        path,
        launcher_env(entry, point, resolution.fleet, resolution.scenario_subdir, dram_gb),
        runner=_runner_context(snapshot, entry, point, resolution, dram_gb, _ran_as(resolution)),
        library=_context_file(snapshot, LIBRARY_PATH),
        conditional=True,
    )
    partial.extend(result.partial)
    if resolution.alternatives:
        partial.append(
            PartialMarker(
                construct_name="fleet-dependent-script",
                path=resolution.launcher or path,
                detail="other fleets of runner "
                f"{entry.runner!r} run {', '.join(resolution.alternatives)}",
            )
        )
    if not result.served or result.argv is None:
        return ServeEvidence(
            script=path,
            blob_sha=blob,
            served=False,
            flags=FlagSet(),
            model=None,
            partial=tuple(partial),
        )
    runs = []
    alternatives: list[ServedAlternative | None] = [*result.alternatives] or [None]
    for alternative in alternatives:
        served = result
        if alternative is not None:
            served = result.model_copy(update={"argv": alternative.argv, "env": alternative.env})
        argv, config_markers = merge_config_file(served, path)
        partial.extend(m for m in config_markers if m not in partial)
        try:
            command = normalise_argv(argv, served.env)
        except InputError as exc:
            raise ArgvNotNormalisableError(str(exc), path=path) from None
        runs.append((alternative.outcomes if alternative else (), command))
    flags, conditional = split_conditional([(o, c.flags) for o, c in runs], result.conditions)
    models = {command.model for _, command in runs}
    if len(models) > 1:
        raise ArgvNotNormalisableError(
            f"the served model depends on a run-time condition: {sorted(map(str, models))}",
            path=path,
        )
    return ServeEvidence(
        script=path,
        blob_sha=blob,
        served=True,
        flags=flags,
        model=runs[0][1].model,
        partial=tuple(partial),
        conditional=conditional,
    )
