"""Where an srt-slurm ``CONFIG_FILE`` really resolves: the runner launcher's overlay copies.

An NVIDIA multinode runner launcher (``runners/launch_<fleet>.sh``) clones
srt-slurm and then copies InferenceX recipe directories onto the checkout,
``cp -rT "$GITHUB_WORKSPACE/benchmarks/multi_node/srt-slurm-recipes/SRC" recipes/DST``
(or ``cp -r SRC/. DST``), before ``srtctl`` reads ``CONFIG_FILE`` (``recipes/…``,
relative to the checkout). A file ``DST/x`` then is ``SRC/x`` when the copy
brought one, else whatever the checkout had. Most copies are identities
(``SRC`` = ``srt-slurm-recipes/`` + ``DST`` minus ``recipes/``), which the plain
lookup (:func:`~.srt_slurm.recipe_repo_path`) already follows; some rename
(``vllm/minimax-m2.5-b300-fp8`` → ``recipes/vllm/minimax-m2.5-fp8``).

The runner launcher is evaluated statically (:func:`~provenance.evidence.bash.evaluate_script`
with the multinode template's env for the point, ``cp`` recorded), never run.
The last copy that brings ``SRC/x`` decides. A copy that may land on the
recipe but whose operands are not static, whose form is not one of the two
above, or that is reached only under a condition the evaluator cannot decide
marks the record partial (``srt-slurm-overlay``); nothing is guessed. A
runner launcher that cannot be evaluated leaves the plain lookup, marked so.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from provenance.errors import InputError
from provenance.evidence.bash import Evaluation, evaluate_script
from provenance.evidence.bash.values import Text, known
from provenance.evidence.inferencex.amd_disagg import NotUnderstoodError, matrix_env
from provenance.evidence.inferencex.master import MasterEntry, MultiNodePoint
from provenance.evidence.inferencex.scripts import fleets_for_runner
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.model.record import PartialMarker

CONSTRUCT = "srt-slurm-overlay"
_RECORDED = frozenset({"cp"})
_CHECKOUT_RECIPES = "recipes/"
_TREE_RECIPES = "srt-slurm-recipes/"
_VARIABLE = re.compile(r"\$\{?#?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True, slots=True)
class OverlayCopy:
    """One ``cp`` of the runner launcher that may land on the srt-slurm checkout."""

    line: int
    #: InferenceX tree path of the copied directory (None: not static / not in the tree)
    src: str | None
    #: checkout path it lands on, ``recipes/…`` (None: not static)
    dst: str | None
    #: why the copy is not followed (a form other than ``cp -rT`` / ``cp -r SRC/.``)
    unfollowed: str | None
    #: conditions known only at run time that the copy depends on
    conditions: tuple[PartialMarker, ...]


@dataclass(frozen=True, slots=True)
class RunnerOverlays:
    launcher: str | None
    copies: tuple[OverlayCopy, ...] = ()
    #: why the launcher could not be evaluated (None: it was, or has no copies)
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class RecipeLookup:
    """The tree path read for a ``CONFIG_FILE``, and what decided it."""

    path: str
    #: the runner launcher, when one of its copies decided ``path`` (else None)
    runner_launcher: str | None
    partial: tuple[PartialMarker, ...]


def _literal(text: Text) -> str:
    return "".join(s for s in text if isinstance(s, str))


def _parse_copy(argv: tuple[Text, ...]) -> tuple[str | None, str | None, str | None]:
    """``cp`` words → (SRC as given, DST as given, reason not followed)."""
    options: list[str] = []
    operands: list[Text] = []
    for word in argv[1:]:
        text = known(word)
        if not operands and text is not None and text.startswith("-") and text != "--":
            options.append(text)
        elif not (not operands and text == "--"):
            operands.append(word)
    short = "".join(o[1:] for o in options if not o.startswith("--"))
    recursive = any(c in short for c in "rRa") or "--recursive" in options
    no_target = "T" in short or "--no-target-directory" in options
    if len(operands) != 2:
        return None, None, f"cp with {len(operands)} operands"
    src, dst = (known(w) for w in operands)
    if not recursive:
        return src, dst, "cp without -r"
    if no_target:
        return src, dst, None
    if src is not None and src.rstrip("/").endswith("/."):
        return src.rstrip("/")[:-2], dst, None
    return src, dst, "cp -r without -T (lands in DST or DST/<name>, by what exists at run time)"


def _tree_path(src: str | None, workspace: str) -> str | None:
    if src is None or not src.startswith(workspace + "/"):
        return None
    path = posixpath.normpath(src[len(workspace) + 1 :])
    return None if path.startswith(("..", "/")) or path == "." else path


def _checkout_path(dst: str | None) -> str | None:
    if dst is None or dst.startswith("/"):
        return None
    path = posixpath.normpath(dst)
    return None if path.startswith("..") or path == "." else path


def _copies(evaluation: Evaluation, workspace: str) -> tuple[OverlayCopy, ...]:
    out: list[OverlayCopy] = []
    for capture in evaluation.recorded:
        words = capture.argv[1:]
        mentions_recipes = any(
            _TREE_RECIPES in _literal(w) or _literal(w).startswith(_CHECKOUT_RECIPES) for w in words
        )
        if not mentions_recipes:
            continue
        src, dst, unfollowed = _parse_copy(capture.argv)
        conditions = tuple(sorted(capture.markers, key=lambda m: (m.line or 0, m.detail)))
        out.append(
            OverlayCopy(
                line=capture.line,
                src=_tree_path(src, workspace),
                dst=_checkout_path(dst),
                unfollowed=unfollowed,
                conditions=conditions,
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _evaluate(
    blob: str, text: str, path: str, env: tuple[tuple[str, str], ...]
) -> tuple[tuple[OverlayCopy, ...], str | None]:
    """Copies of one runner launcher text under one env (pure: cached across commits)."""
    variables = dict(env)
    try:
        evaluation = evaluate_script(text, path, variables, record=_RECORDED)
    except InputError as exc:
        return (), str(exc)
    return _copies(evaluation, variables.get("GITHUB_WORKSPACE", "")), None


def _relevant_env(text: str, env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The env restricted to the names the script can read (the cache key).

    A script with indirect expansion (``${!…}``) or that lists its environment
    could read any name: it keeps the whole env.
    """
    if "${!" in text or re.search(r"(^|[\s;|&(])(env|printenv|declare -p|export -p)\b", text):
        return tuple(sorted(env.items()))
    names = set(_VARIABLE.findall(text)) | {"GITHUB_WORKSPACE"}
    return tuple(sorted((k, v) for k, v in env.items() if k in names))


def runner_overlays(
    snapshot: Snapshot, entry: MasterEntry, point: MultiNodePoint
) -> RunnerOverlays:
    """The overlay copies the runner launcher of ``entry`` makes for ``point``."""
    for fleet in fleets_for_runner(snapshot, entry.runner):
        path = f"runners/launch_{fleet}.sh"
        if snapshot.is_file(path):
            break
    else:
        return RunnerOverlays(launcher=None)
    raw = snapshot.read(path)
    assert raw is not None
    text = raw.decode("utf-8", "replace")
    if not re.search(r"(^|[\s;|&(])cp\s", text):
        return RunnerOverlays(launcher=path)
    try:
        env = matrix_env(entry, point)
    except NotUnderstoodError as exc:
        return RunnerOverlays(launcher=path, problem=f"its env is not known: {exc}")
    blob = snapshot.blob_sha(path) or ""
    copies, problem = _evaluate(blob, text, path, _relevant_env(text, env))
    return RunnerOverlays(launcher=path, copies=copies, problem=problem)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def follow_overlays(
    snapshot: Snapshot, overlays: RunnerOverlays, config_path: str, default: str, *, origin: str
) -> RecipeLookup:
    """``CONFIG_FILE`` path (``recipes/…``) → the tree file srtctl reads.

    ``default`` is the plain lookup's path (``benchmarks/multi_node/srt-slurm-recipes/…``).
    """
    launcher = overlays.launcher
    if launcher is None:
        return RecipeLookup(default, None, ())
    if overlays.problem is not None:
        marker = PartialMarker(
            construct_name=CONSTRUCT,
            path=launcher,
            detail=f"overlay copies not followed: {overlays.problem}"[:200],
        )
        return RecipeLookup(default, None, (marker,))
    config = posixpath.normpath(config_path.strip())
    partial: list[PartialMarker] = []
    for copy in reversed(overlays.copies):
        where = f"cp at {launcher}:{copy.line}"
        if copy.dst is not None and not _under(config, copy.dst):
            continue
        if copy.unfollowed is not None or copy.src is None or copy.dst is None:
            reason = copy.unfollowed or "its source or target is not static"
            partial.append(
                PartialMarker(
                    construct_name=CONSTRUCT,
                    path=launcher,
                    line=copy.line,
                    detail=f"{where} may land on {config}: {reason}"[:200],
                )
            )
            continue
        candidate = posixpath.join(copy.src, config[len(copy.dst.rstrip("/")) + 1 :])
        candidate = snapshot.safe_path(candidate, origin=f"{launcher}:{copy.line} ({origin})")
        if not snapshot.is_file(candidate):
            continue
        if candidate == default:
            return RecipeLookup(default, None, tuple(partial))
        if copy.conditions:
            first = copy.conditions[0]
            partial.append(
                PartialMarker(
                    construct_name=CONSTRUCT,
                    path=launcher,
                    line=copy.line,
                    detail=(
                        f"{where} runs only under a condition known at run time "
                        f"({first.construct_name}, line {first.line}): {first.detail}"
                    )[:200],
                )
            )
        return RecipeLookup(candidate, launcher, tuple(partial))
    return RecipeLookup(default, None, tuple(partial))
