"""Which merges of InferenceX changed vLLM evidence: the plan of a whole-history ingest.

From git alone (one ``git log --raw`` walk of the first-parent line, blobs read
by SHA, nothing checked out): a merge is planned when its diff against its first
parent changed

* a master config entry (``configs/*-master.yaml``, ``.github/configs/…``,
  ``configs/deprecated/``) of a vLLM config key — a key whose name contains
  ``vllm``, as every vLLM-framework key's does (``vllm``, ``dynamo-vllm``,
  ``llmd-vllm``). Entries are compared as text wherever they live (comments and
  blank lines ignored), so moving an entry between files changes nothing;
* a launcher or srt-slurm recipe under ``benchmarks/`` unless its path names only
  another framework (``sglang``, ``trt``, ``atom``, ``tilert``): old launchers
  (``70b_fp8_h100_docker.sh``) name no framework at all;
* a runner launcher (``runners/``) or the runner definitions (``runners.yaml``),
  which every launcher of their fleet runs under;
* ``perf-changelog.yaml``: an entry it added whose ``config-keys`` name a vLLM key.

Each planned merge carries the reasons it was selected. The plan is a superset:
at each merge the extractor keeps only the records that merge backs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from provenance.errors import InputError
from provenance.evidence.inferencex.blocks import key_blocks
from provenance.evidence.inferencex.changelog import (
    PERF_CHANGELOG,
    changelog_entries,
    key_glob_matches,
)
from provenance.evidence.inferencex.history import pr_of_subject
from provenance.evidence.inferencex.master import (
    ACTIVE_MASTER_PATHS,
    DEPRECATED_MASTER_DIRS,
    LEGACY_MASTER_PATHS,
    is_master_path,
    master_roots,
)
from provenance.evidence.inferencex.scripts import RUNNERS_PATHS
from provenance.sources.git import (
    RawChange,
    Repo,
    first_parent_log,
    first_parent_raw,
    read_object,
    tree_blobs,
)

VLLM = "vllm"
RUNNER_LAUNCHERS = "runners/"
#: Frameworks a launcher's path may name that make it no vLLM launcher.
OTHER_FRAMEWORKS = ("sglang", "trt", "atom", "tilert")
#: Every path whose change can change vLLM evidence (what ``git log`` is asked about).
WATCHED_PATHS = (
    *ACTIVE_MASTER_PATHS,
    *LEGACY_MASTER_PATHS,
    *DEPRECATED_MASTER_DIRS,
    "benchmarks",
    RUNNER_LAUNCHERS.rstrip("/"),
    *RUNNERS_PATHS,
    PERF_CHANGELOG,
)
_NULL_BLOB = "0" * 40


@dataclass(frozen=True)
class PlannedMerge:
    """A first-parent merge whose diff changed vLLM evidence, and why."""

    sha: str
    timestamp: int
    subject: str
    pr: int | None
    reasons: tuple[str, ...]


def is_vllm_key(key: str) -> bool:
    return VLLM in key.lower()


def is_vllm_launcher_path(path: str) -> bool:
    """A file under ``benchmarks/`` that may serve vLLM (see the module doc)."""
    lowered = path.lower()
    if not lowered.startswith("benchmarks/") or lowered.endswith(".md"):
        return False
    return VLLM in lowered or not any(name in lowered for name in OTHER_FRAMEWORKS)


class _Blobs:
    """Key blocks and changelog entries per blob, each blob read once."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._blocks: dict[str, dict[str, list[str]]] = {}
        #: the last few states' entries (consecutive commits share one side)
        self._entries: dict[tuple[tuple[str, str], ...], dict[str, frozenset[str]]] = {}

    def blocks(self, sha: str) -> dict[str, list[str]]:
        if sha not in self._blocks:
            text = read_object(self.repo, bytes.fromhex(sha)).decode("utf-8", "replace")
            self._blocks[sha] = key_blocks(text)
        return self._blocks[sha]

    def vllm_entries(self, state: Mapping[str, str]) -> dict[str, frozenset[str]]:
        """vLLM key → its entry digests across every master file of ``state``."""
        token = tuple(sorted(state.items()))
        known = self._entries.get(token)
        if known is not None:
            return known
        found: dict[str, set[str]] = {}
        for sha in state.values():
            for key, digests in self.blocks(sha).items():
                if is_vllm_key(key):
                    found.setdefault(key, set()).update(digests)
        entries = {key: frozenset(digests) for key, digests in found.items()}
        if len(self._entries) > 4:
            self._entries.clear()
        self._entries[token] = entries
        return entries

    def changelog(self, sha: str) -> set[tuple[tuple[str, ...], str | None]]:
        if sha == _NULL_BLOB:
            return set()
        try:
            items = changelog_entries(read_object(self.repo, bytes.fromhex(sha)))
        except InputError:
            return set()
        return {(tuple(e.config_keys), e.pr_link) for e, _ in items if e is not None}


def _changelog_reasons(blobs: _Blobs, old: str, new: str, vllm_keys: Iterable[str]) -> list[str]:
    added = blobs.changelog(new) - blobs.changelog(old)
    keys = sorted(set(vllm_keys))
    named = sorted(
        {
            pattern
            for globs, _ in added
            for pattern in globs
            if is_vllm_key(pattern) or any(key_glob_matches(pattern, k) for k in keys)
        }
    )
    return [f"{PERF_CHANGELOG} names {pattern}" for pattern in named]


def _reasons(
    changes: list[RawChange], blobs: _Blobs, masters: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """Why ``commit`` changed vLLM evidence, and the master-config state after it."""
    reasons: list[str] = []
    after = dict(masters)
    for change in changes:
        path = change.path
        if is_master_path(path):
            if change.status == "D":
                after.pop(path, None)
            else:
                after[path] = change.new_sha
        elif path == PERF_CHANGELOG:
            continue
        elif path in RUNNERS_PATHS or path.startswith(RUNNER_LAUNCHERS):
            reasons.append(f"runner {path}")
        elif is_vllm_launcher_path(path):
            reasons.append(f"launcher or recipe {path}")
    before_entries = blobs.vllm_entries(masters) if after != masters else {}
    after_entries = blobs.vllm_entries(after) if after != masters else {}
    for key in sorted(before_entries.keys() | after_entries.keys()):
        if before_entries.get(key) != after_entries.get(key):
            reasons.append(f"master config entry {key}")
    for change in changes:
        if change.path == PERF_CHANGELOG:
            known = after_entries or blobs.vllm_entries(after)
            reasons += _changelog_reasons(blobs, change.old_sha, change.new_sha, known)
    return reasons, after


def plan_vllm_merges(repo: Repo, rev: str, since: str | None = None) -> list[PlannedMerge]:
    """The merges on ``rev``'s first-parent line (after ``since``) that changed vLLM evidence.

    Oldest first. ``since`` must be a commit on that line (the ledger's revision).
    """
    logged = first_parent_raw(repo, f"{since}..{rev}" if since else rev, WATCHED_PATHS)
    log = {entry.sha: entry for entry in first_parent_log(repo, rev)}
    masters_paths = master_roots()
    masters = (
        {p: s for p, s in tree_blobs(repo, since, masters_paths).items() if is_master_path(p)}
        if since
        else {}
    )
    if not since and logged:
        oldest = repo.commit(logged[-1][0])
        if oldest.parents:
            parent = oldest.parents[0].hexsha
            found = tree_blobs(repo, parent, masters_paths)
            masters = {p: s for p, s in found.items() if is_master_path(p)}
    blobs = _Blobs(repo)
    planned = []
    for sha, changes in reversed(logged):
        reasons, masters = _reasons(changes, blobs, masters)
        if reasons:
            commit = log[sha]
            planned.append(
                PlannedMerge(
                    sha=sha,
                    timestamp=commit.timestamp,
                    subject=commit.subject,
                    pr=pr_of_subject(commit.subject),
                    reasons=tuple(reasons),
                )
            )
    return planned
