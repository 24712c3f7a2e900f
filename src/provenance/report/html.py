"""A self-contained HTML page of an audit: where a recipe is backed by evidence.

``render_html(report)`` returns one page with no external assets and no network
access (a Content-Security-Policy admits only the page's own inline script and
style, by hash). The audit data is embedded once, as JSON, in a
``<script type="application/json">`` element and rendered by a small vanilla
script (``html_assets/report.js``) that inserts every value with
``textContent`` and builds every link from a URL computed and checked here.

The embedded data is compact, so a full cross-product (tens of thousands of
combinations) stays small:

* every string appears once, in a string table ``s``; everything else refers
  to it by index (``-1`` stands for ``None``);
* flags, evidence references, reasons, nearest-evidence points, roles (role,
  node rank, flags) and role sets are tables of distinct rows, referred to by
  index;
* a selection is split into its *shape* (everything but the features) and its
  *feature set*; both are table rows, and a selection is the integer
  ``shape * len(features) + feature_set``;
* the selections of one verdict group are the sorted integers, run-length
  encoded as ``[gap, run, gap, run, ...]``.

The unreachable groups (``summary.unreachable``: combinations no recipe edit can bring
to any in-scope evidence point) are also written on the server, as their own section
after the matrices (:func:`unreachable_section`, every value through
:func:`~provenance.escaping.html_text`); the matrices mark their cells apart.

Every string of the embedded data (the string table ``s`` and ``meta``) is made inert
with :func:`~provenance.escaping.terminal` before it is embedded, as every other
surface makes it: the script inserts strings with ``textContent``, which would draw a
bidi override or a zero-width character from a PR verbatim. The JSON report keeps the
exact values.

The page layout is described in ``docs/report.md``.

Why one module (about 670 lines): one page writer. The Content-Security-Policy hashes,
the embedded data's encoder and the server-rendered sections (gate, unreachable) must
agree byte for byte with one another, so they are written in one place.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Hashable, Mapping, Sequence
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel, ConfigDict, Field

from provenance.audit.verdicts import (
    AuditReport,
    EvidenceRef,
    FlagProvenance,
    NearestEvidence,
    Reason,
    RoleFlags,
    UnreachableGroup,
)
from provenance.escaping import html_text, terminal
from provenance.model.combination import PdPool, PdSelection, Selection
from provenance.model.ledger import SweepRun
from provenance.model.reasons import VerdictKind
from provenance.report.pr_html import HtmlGate, gate_section

if TYPE_CHECKING:
    from provenance.review.diff import DiffReport

#: Version of the embedded data layout (read by ``report.js``).
DATA_VERSION = 1

_GITHUB = "https://github.com/"
_PR_REF = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)#(?P<number>[1-9][0-9]*)\Z", re.ASCII)
_LABEL_SEPARATOR = " · "
_PD_LABEL = re.compile(r"P(?P<pn>[0-9]+)n-(?P<pp>[^/]+)/D(?P<dn>[0-9]+)n-(?P<dp>.+)\Z", re.ASCII)
_NODES_LABEL = re.compile(r"(?P<n>[0-9]+)n\Z", re.ASCII)

FAMILY_ORDER = ("single-node", "multi-node", "pd_cluster")


class ChangeKind(StrEnum):
    """How one selection changed between the base and the head of a diff."""

    NEW = "new"
    REMOVED = "removed"
    VERDICT_CHANGED = "verdict-changed"
    FLAGS_CHANGED = "flags-changed"


class HtmlDiff(BaseModel):
    """Changes to highlight: selection label (``Selection.label()``) -> change kind.

    Removed selections are no longer in the report: the page places each in its
    cell from ``removed`` (the selections themselves) or, failing that, by
    parsing its label; a label it cannot place is listed above the matrices.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: str = ""
    head: str = ""
    changes: dict[str, ChangeKind] = Field(default_factory=dict)
    removed: tuple[Selection, ...] = ()
    #: the PR gate's result and blocking list, shown above the matrices
    gate: HtmlGate | None = None

    @classmethod
    def from_review(cls, review: DiffReport) -> HtmlDiff:
        """The changes of a base/head audit diff (``provenance.review.diff``)."""
        changes: dict[str, ChangeKind] = {}
        removed: list[Selection] = []
        for group in review.changes:
            kind = ChangeKind(group.kind)
            for selection in group.iter_selections():
                changes[selection.label()] = kind
                if kind is ChangeKind.REMOVED:
                    removed.append(selection)
        return cls(
            base=review.base,
            head=review.head,
            changes=changes,
            removed=tuple(removed),
            gate=HtmlGate.from_review(review),
        )


class _Table:
    """Distinct rows, each given the index of its first appearance."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self._index: dict[Hashable, int] = {}

    def add(self, row: Hashable) -> int:
        found = self._index.get(row)
        if found is None:
            found = len(self.rows)
            self._index[row] = found
            self.rows.append(row)
        return found

    def __len__(self) -> int:
        return len(self.rows)


def family_of(strategy: str | None) -> str:
    """The strategy family a matrix is drawn for: single-node, multi-node, pd_cluster, or other."""
    if strategy is None:
        return "omni"
    if strategy.startswith("single_node"):
        return "single-node"
    if strategy.startswith("multi_node"):
        return "multi-node"
    if strategy.startswith("pd_cluster"):
        return "pd_cluster"
    return strategy


def shape_column(selection: Selection) -> str:
    """The matrix column of a selection in the (default) *deployment shape* layout."""
    if selection.pd is not None:
        label = f"P {selection.pd.prefill.parallelism} / D {selection.pd.decode.parallelism}"
    else:
        strategy = selection.strategy or "omni"
        prefix = family_of(selection.strategy).replace("-", "_") + "_"
        label = strategy.removeprefix(prefix) or strategy
        if selection.node_count is not None and selection.node_count != 1:
            label += f" · {selection.node_count}n"
    if selection.kv_offload:
        label += f" · kv={selection.kv_offload}"
        if selection.kv_instances is not None:
            label += f"×{selection.kv_instances}"
    return label


def _feature_parts(selection: Selection) -> list[str]:
    parts = []
    for feature in selection.features:
        mode = selection.feature_modes.get(feature)
        parts.append(f"+{feature}={mode}" if mode else f"+{feature}")
    return parts


def pr_url(ref: str) -> str | None:
    """``OWNER/REPO#N`` -> the pull request's URL on GitHub, or None when not such a ref."""
    match = _PR_REF.match(ref)
    if match is None:
        return None
    return f"{_GITHUB}{match['repo']}/pull/{match['number']}"


def run_url(run: SweepRun, pr: str) -> str | None:
    """A sweep run's URL: its recorded URL when on GitHub, else built from the PR's repo."""
    if run.url and run.url.startswith(_GITHUB) and _safe_url(run.url):
        return run.url
    match = _PR_REF.match(pr)
    if match is None:
        return None
    url = f"{_GITHUB}{match['repo']}/actions/runs/{run.run_id}"
    if run.attempt > 1:
        url += f"/attempts/{run.attempt}"
    return url


def _safe_url(url: str) -> bool:
    return re.fullmatch(r"https://github\.com/[A-Za-z0-9._~/%#?=&+-]*", url) is not None


def parse_label(label: str) -> Selection | None:
    """Invert ``Selection.label()`` (best effort, for removed selections of a diff)."""
    parts = label.split(_LABEL_SEPARATOR)
    if len(parts) < 3 or not all(parts[:3]):
        return None
    variant, hardware, strategy = parts[:3]
    node_count: int | None = None
    pd: PdSelection | None = None
    kv: str | None = None
    features: list[str] = []
    modes: dict[str, str | None] = {}
    for part in parts[3:]:
        pd_match = _PD_LABEL.match(part)
        nodes_match = _NODES_LABEL.match(part)
        if pd_match and pd is None and not features:
            pd = PdSelection(
                prefill=PdPool(nodes=int(pd_match["pn"]), parallelism=pd_match["pp"]),
                decode=PdPool(nodes=int(pd_match["dn"]), parallelism=pd_match["dp"]),
            )
        elif nodes_match and node_count is None and not features:
            node_count = int(nodes_match["n"])
        elif part.startswith("kv=") and kv is None and not features:
            kv = part[3:]
        elif part.startswith("+") and len(part) > 1:
            name, _, mode = part[1:].partition("=")
            features.append(name)
            modes[name] = mode or None
        else:
            return None
    return Selection(
        variant=variant,
        hardware=hardware,
        strategy=strategy,
        node_count=node_count,
        pd=pd,
        kv_offload=kv,
        features=tuple(features),
        feature_modes={k: v for k, v in modes.items() if v is not None},
    )


class _Encoder:
    """Builds the compact page data from an AuditReport (see the module docstring).

    Verdict entries share their parts (a judgement's roles and flags, reasons, evidence
    references): each part object is encoded once and its row remembered by ``id``. The
    report being encoded keeps every part alive, so no id is reused meanwhile. Why (a
    constant factor, kept here alone): on the MiniMax-M3 report, encoding each part once
    took the page data from 1.75 s to 0.55 s (docs/performance.md, session 4), the page
    byte for byte the same (``tests/snapshots``); and by ``id`` because hashing the same
    parts by value takes 0.54 s, their ids 0.03 s (see :mod:`.json_report`).
    """

    def __init__(self, sweeps: Mapping[str, Sequence[SweepRun]]) -> None:
        self.strings = _Table()
        self.prs = _Table()
        self.runs = _Table()
        self.evrefs = _Table()
        self.flags = _Table()
        self.roles = _Table()
        self.rolesets = _Table()
        self.reasons = _Table()
        self.nearest = _Table()
        self.shapes = _Table()
        self.features = _Table()
        self.recipes = _Table()
        self._sweeps = sweeps
        self._pr_index: dict[str, int] = {}
        #: id of a shared part (flag, evidence reference, roles, reason, nearest) -> row
        self._rows: dict[int, int] = {}
        #: the fields a shape row depends on -> row; features and modes -> row
        self._shapes: dict[tuple[object, ...], int] = {}
        self._feature_sets: dict[tuple[object, ...], int] = {}

    # scalars ------------------------------------------------------------------
    def s(self, text: str | None) -> int:
        return -1 if text is None else self.strings.add(text)

    def pr(self, ref: str) -> int:
        found = self._pr_index.get(ref)
        if found is not None:
            return found
        runs = tuple(
            self.runs.add(
                (run.run_id, run.attempt, self.s(run.conclusion), self.s(run_url(run, ref)))
            )
            for run in self._sweeps.get(ref, ())
        )
        found = self.prs.add((self.s(ref), self.s(pr_url(ref)), runs))
        self._pr_index[ref] = found
        return found

    def pr_list(self, refs: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.pr(ref) for ref in refs)

    # structures ---------------------------------------------------------------
    def evref(self, ref: EvidenceRef) -> int:
        found = self._rows.get(id(ref))
        if found is None:
            found = self._rows[id(ref)] = self.evrefs.add(
                (self.s(ref.record), self.pr_list(ref.prs))
            )
        return found

    def flag(self, flag: FlagProvenance) -> int:
        found = self._rows.get(id(flag))
        if found is None:
            evidence = tuple(self.evref(ref) for ref in flag.evidence)
            found = self._rows[id(flag)] = self.flags.add(
                (self.s(flag.key), self.s(flag.value), self.s(flag.cls), evidence)
            )
        return found

    def roleset(self, roles: Sequence[RoleFlags]) -> int:
        found = self._rows.get(id(roles))
        if found is None:
            found = self._rows[id(roles)] = self._roleset(roles)
        return found

    def _roleset(self, roles: Sequence[RoleFlags]) -> int:
        rows = tuple(
            self.roles.add(
                (
                    self.s(role.role),
                    -1 if role.node_rank is None else role.node_rank,
                    tuple(self.flag(f) for f in role.flags),
                )
            )
            for role in roles
        )
        return self.rolesets.add(rows)

    def reason(self, reason: Reason) -> int:
        found = self._rows.get(id(reason))
        if found is None:
            found = self._rows[id(reason)] = self._reason(reason)
        return found

    def _reason(self, reason: Reason) -> int:
        return self.reasons.add(
            (
                self.s(reason.code.value),
                self.s(reason.role),
                self.s(reason.flag),
                self.s(reason.recipe_value),
                self.s(reason.evidence_value),
                tuple(self.s(source) for source in reason.sources),
                self.s(reason.detail),
                tuple(self.pr(src) for src in reason.sources if _PR_REF.match(src)),
            )
        )

    def near(self, point: NearestEvidence) -> int:
        return self.nearest.add(
            (
                self.s(point.record),
                self.s(point.config_key),
                self.pr_list(point.prs),
                self.s(point.role),
                point.distance,
                tuple((self.s(k), self.s(v)) for k, v in sorted(point.only_recipe.items())),
                tuple((self.s(k), self.s(v)) for k, v in sorted(point.only_evidence.items())),
                tuple(
                    (self.s(k), self.s(a), self.s(b)) for k, (a, b) in sorted(point.changed.items())
                ),
            )
        )

    def shape(self, recipe: str, selection: Selection) -> int:
        """The row of ``selection``'s deployment shape (everything but its features)."""
        pd = selection.pd
        key = (
            recipe,
            selection.variant,
            selection.hardware,
            selection.strategy,
            selection.node_count,
            selection.kv_offload,
            selection.kv_instances,
            None
            if pd is None
            else (pd.prefill.nodes, pd.prefill.parallelism, pd.decode.nodes, pd.decode.parallelism),
        )
        found = self._shapes.get(key)
        if found is None:
            found = self._shapes[key] = self._shape(recipe, selection)
        return found

    def _shape(self, recipe: str, selection: Selection) -> int:
        # Selection.label() without its feature parts: shape label + feature suffix == label().
        parts = selection.label().split(_LABEL_SEPARATOR)
        label = _LABEL_SEPARATOR.join(parts[:3] + [p for p in parts[3:] if not p.startswith("+")])
        return self.shapes.add(
            (
                self.recipes.add(recipe),
                self.s(selection.variant),
                self.s(selection.hardware),
                self.s(family_of(selection.strategy)),
                self.s(shape_column(selection)),
                self.s(label),
            )
        )

    def feature_set(self, selection: Selection) -> int:
        """The row of ``selection``'s features (with their modes)."""
        key = (selection.features, tuple(selection.feature_modes.items()))
        found = self._feature_sets.get(key)
        if found is None:
            found = self._feature_sets[key] = self._feature_set(selection)
        return found

    def _feature_set(self, selection: Selection) -> int:
        parts = _feature_parts(selection)
        column = " ".join(parts) if parts else "(no features)"
        suffix = "".join(_LABEL_SEPARATOR + p for p in parts)
        return self.features.add((self.s(column), self.s(suffix)))


def _runs(codes: list[int]) -> list[int]:
    """Sorted distinct integers as ``[gap, run, gap, run, ...]`` (gap: from the last run's end)."""
    out: list[int] = []
    previous_end = 0
    start: int | None = None
    last = 0
    for code in sorted(set(codes)):
        if start is not None and code == last + 1:
            last = code
            continue
        if start is not None:
            out += [start - previous_end, last - start + 1]
            previous_end = last + 1
        start = last = code
    if start is not None:
        out += [start - previous_end, last - start + 1]
    return out


def build_page_data(
    report: AuditReport,
    *,
    diff: HtmlDiff | None = None,
    sweeps: Mapping[str, Sequence[SweepRun]] | None = None,
) -> dict[str, Any]:
    """The JSON-able data the page script renders (layout in the module docstring)."""
    enc = _Encoder(sweeps or {})
    for recipe in report.recipes:
        enc.recipes.add(recipe)

    # Pass 1: groups with an identical outcome share one entry row; collect
    # their (shape, feature set) pairs.
    group_rows = _Table()
    group_pairs: dict[int, list[tuple[int, int]]] = {}
    label_pairs: dict[str, tuple[int, int]] = {}
    for entry in report.verdicts:
        row = (
            enc.recipes.add(entry.recipe),
            0 if entry.verdict is VerdictKind.RECOMMENDED else 1,
            enc.roleset(entry.roles),
            tuple(enc.reason(r) for r in entry.reasons),
            tuple(enc.near(n) for n in entry.nearest),
            tuple(enc.evref(e) for e in entry.evidence),
            enc.s(entry.declared_by),
        )
        group = group_rows.add(row)
        pairs = group_pairs.setdefault(group, [])
        for selection in entry.iter_selections():
            shape_feat = (enc.shape(entry.recipe, selection), enc.feature_set(selection))
            pairs.append(shape_feat)
            if diff is not None:
                label_pairs[selection.label()] = shape_feat

    # Diff: changed selections found in the report, removed ones placed by their label.
    marks: list[tuple[int, int, int]] = []
    unplaced: list[tuple[int, int]] = []
    if diff is not None:
        default_recipe = report.recipes[0] if report.recipes else ""
        removed = {s.label(): s for s in diff.removed}
        for label, kind in sorted(diff.changes.items()):
            pair: tuple[int, int] | None = label_pairs.get(label)
            if pair is None and kind is ChangeKind.REMOVED:
                parsed = removed.get(label) or parse_label(label)
                if parsed is not None:
                    pair = (enc.shape(default_recipe, parsed), enc.feature_set(parsed))
            if pair is None:
                unplaced.append((enc.s(label), enc.s(kind.value)))
            else:
                marks.append((pair[0], pair[1], enc.s(kind.value)))

    width = max(len(enc.features), 1)
    groups = []
    combinations = 0
    for index, row in enumerate(group_rows.rows):
        codes = [shape * width + feat for shape, feat in group_pairs.get(index, [])]
        combinations += len(set(codes))
        groups.append([*row, _runs(codes)])

    data: dict[str, Any] = {
        "v": DATA_VERSION,
        "meta": {
            "tool_version": enc.s(report.tool_version),
            "ledger": enc.s(report.ledger_line()),
            "recipes": enc.s(report.recipes_line()),
            "offline": report.offline,
            "notices": [
                *(enc.s(f"invalid recipe, not audited: {e.located()}") for e in report.errors),
                *(enc.s(n) for n in report.notices),
            ],
            "summary": report.summary.model_dump(mode="json"),
            "combinations": combinations,
        },
        "recipes": [enc.s(r) for r in enc.recipes.rows],
        "families": list(FAMILY_ORDER),
        "nf": width,
        "shapes": enc.shapes.rows,
        "features": enc.features.rows,
        "groups": groups,
        "roles": enc.roles.rows,
        "rolesets": enc.rolesets.rows,
        "flags": enc.flags.rows,
        "evrefs": enc.evrefs.rows,
        "reasons": enc.reasons.rows,
        "nearest": enc.nearest.rows,
        "reverse": [
            (
                enc.s(r.record),
                enc.s(r.config_key),
                enc.pr_list(r.prs),
                enc.s(r.status),
                r.combinations,
                enc.s(None if r.example is None else r.example.label()),
                enc.s(r.why),
            )
            for r in report.reverse
        ],
        "claims": [
            (enc.s(c.recipe), enc.s(c.subject), enc.s(c.claim), c.recommended, enc.s(c.detail))
            for c in report.claims
        ],
        "diff": None
        if diff is None
        else {
            "base": enc.s(diff.base),
            "head": enc.s(diff.head),
            "marks": marks,
            "unplaced": unplaced,
        },
    }
    # The string table last: every field above has added its strings by now.
    data["prs"] = enc.prs.rows
    data["runs"] = enc.runs.rows
    data["s"] = [terminal(text) for text in enc.strings.rows]
    data["meta"] = _inert(data["meta"])
    return data


def _inert(value: Any) -> Any:
    """``value`` with every string (keys too) made terminal-safe, the shape kept."""
    if isinstance(value, str):
        return terminal(value)
    if isinstance(value, dict):
        return {_inert(key): _inert(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_inert(item) for item in value]
    return value


def embed_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` appear raw.

    Escaping every ``<`` rules out both ``</script`` and ``<!--``; JSON.parse
    reads the ``\\u003c`` escapes back as the original characters.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _asset(name: str) -> str:
    text = resources.files("provenance.report").joinpath("html_assets", name).read_text("utf-8")
    if "</" in text or "<!--" in text:
        # An inline asset must not be able to close its own element.
        raise ValueError(f"html asset {name} contains '</' or '<!--'")
    return text


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def unreachable_section(groups: Sequence[UnreachableGroup]) -> str:
    """The ``<section id="unreachable">`` element: one table row per unreachable group
    (empty when there is none). Plain HTML, shown without JavaScript; every value from
    the audit is escaped and none goes into an attribute."""
    if not groups:
        return ""
    total = sum(g.combinations for g in groups)
    out = [
        '<section id="unreachable" class="unreachable-section"'
        ' aria-labelledby="unreachable-title">',
        f'<h2 id="unreachable-title">Unreachable groups ({len(groups)}): no recipe edit '
        f"reaches evidence — {total} combination(s)</h2>",
        '<p class="unreachable-note">Evidence exists for these cells, but only in deployment '
        "shapes the recipe schema cannot express; their other reasons are secondary.</p>",
        '<table class="unreachable-groups"><thead><tr><th scope="col">recipe</th>'
        '<th scope="col">variant</th><th scope="col">hardware</th>'
        '<th scope="col">strategy</th><th scope="col">combinations</th>'
        '<th scope="col">why</th></tr></thead><tbody>',
    ]
    for group in groups:
        out.append(
            f"<tr><td>{html_text(group.recipe)}</td><td><code>{html_text(group.variant)}</code>"
            f"</td><td><code>{html_text(group.hardware)}</code></td>"
            f"<td>{html_text(group.strategy or 'omni')}</td><td>{group.combinations}</td>"
            f"<td>{html_text(group.why)}</td></tr>"
        )
    out.append("</tbody></table>\n</section>")
    return "\n".join(out) + "\n"


def render_html(
    report: AuditReport,
    *,
    diff: HtmlDiff | None = None,
    sweeps: Mapping[str, Sequence[SweepRun]] | None = None,
) -> str:
    """One self-contained HTML page for ``report``.

    ``diff`` highlights changed selections; ``sweeps`` maps a PR ref
    (``OWNER/REPO#N``) to its sweep runs, linked next to the evidence.
    """
    data = build_page_data(report, diff=diff, sweeps=sweeps)
    css = _asset("report.css")
    script = _asset("report.js")
    csp = (
        "default-src 'none'; "
        f"style-src {_csp_hash(css)}; "
        f"script-src {_csp_hash(script)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    recipes = ", ".join(report.recipes) or "no recipe"
    title = f"provenance audit: {recipes}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{html_text(title)}</title>\n"
        f"<style>{css}</style>\n</head>\n<body>\n"
        '<a class="skip" href="#matrices">Skip to the matrices</a>\n'
        f"<header><h1>{html_text(title)}</h1></header>\n"
        f"{gate_section(diff.gate) if diff is not None and diff.gate is not None else ''}"
        '<main id="app" aria-busy="true">'
        "<noscript><p>This page needs JavaScript to draw the evidence matrix. The data is "
        "in the JSON element <code>provenance-data</code>; <code>provenance audit "
        "--format json</code> gives the same audit as JSON.</p></noscript></main>\n"
        f"{unreachable_section(report.summary.unreachable)}"
        '<script type="application/json" id="provenance-data">'
        f"{embed_json(data)}</script>\n"
        f"<script>{script}</script>\n"
        "</body>\n</html>\n"
    )


def sweeps_from_ledger(root: Path) -> dict[str, tuple[SweepRun, ...]]:
    """PR ref (``OWNER/REPO#N``) -> its recorded sweep runs, from a ledger directory."""
    from provenance.store.ledger import Ledger

    return {str(entry.pr): entry.sweeps for entry in Ledger(root).entries() if entry.sweeps}


def write(report: AuditReport, out: TextIO) -> None:
    """The ``html`` report format: the page, with sweep runs from the report's ledger if present."""
    sweeps = None
    if report.ledger and Path(report.ledger).is_dir():
        sweeps = sweeps_from_ledger(Path(report.ledger))
    out.write(render_html(report, sweeps=sweeps))
