/* provenance audit page: renders the JSON data element into matrices, a detail
   panel and the reverse view. Every data value reaches the DOM through
   textContent or a checked href; no markup is ever built from data.
   Data layout: see provenance/report/html.py. */
(function () {
  "use strict";

  function mark(name) { if (window.performance && performance.mark) { performance.mark("provenance:" + name); } }
  mark("start");
  var D = JSON.parse(document.getElementById("provenance-data").textContent);
  mark("parsed");
  if (D.v !== 1) { throw new Error("provenance report: unknown data layout version " + D.v); }
  var S = D.s;
  var app = document.getElementById("app");
  var GITHUB = /^https:\/\/github\.com\/[A-Za-z0-9._~\/%#?=&+-]*$/;
  var LIST_LIMIT = 200;

  function str(i) { return i === -1 || i === undefined || i === null ? null : S[i]; }

  /* ---- DOM helpers --------------------------------------------------------- */
  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === null || v === undefined || v === false) { return; }
        if (k === "text") { node.textContent = String(v); }
        else if (k === "cls") { node.className = v; }
        else if (k === "on") { Object.keys(v).forEach(function (ev) { node.addEventListener(ev, v[ev]); }); }
        else { node.setAttribute(k, v === true ? "" : String(v)); }
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) { return; }
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function text(t) { return document.createTextNode(t === null ? "" : String(t)); }
  function link(url, label) {
    if (url && GITHUB.test(url)) {
      return el("a", { href: url, rel: "noopener noreferrer", target: "_blank", text: label });
    }
    return el("span", { text: label });
  }
  function short(record) {
    var bare = record ? record.replace(/^sha256:/, "") : record;
    return bare && bare.length > 12 ? bare.slice(0, 12) : bare;
  }
  function recordNode(record) { return el("code", { title: record, text: short(record) }); }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  /* ---- decode -------------------------------------------------------------- */
  var NF = D.nf;
  var shapes = D.shapes.map(function (r) {
    return { recipe: r[0], variant: str(r[1]), hw: str(r[2]), family: str(r[3]), col: str(r[4]), label: str(r[5]) };
  });
  var feats = D.features.map(function (r) { return { col: str(r[0]), suffix: str(r[1]) }; });
  var groups = D.groups.map(function (g) {
    return { recipe: g[0], guide: g[1] === 1, roleset: g[2], reasons: g[3], nearest: g[4], evidence: g[5], declared: str(g[6]), runs: g[7], dist: distance(g[4]),
      unreachable: g[3].some(function (r) { return str(D.reasons[r][0]) === "unreachable"; }) };
  });
  /* How far the nearest evidence is: per role the smallest flag difference, summed; -1 when none. */
  function distance(nearest) {
    var perRole = {};
    nearest.forEach(function (n) {
      var row = D.nearest[n], role = String(row[3]);
      if (!(role in perRole) || row[4] < perRole[role]) { perRole[role] = row[4]; }
    });
    var roles = Object.keys(perRole);
    return roles.length ? roles.reduce(function (sum, r) { return sum + perRole[r]; }, 0) : -1;
  }
  var total = 0;
  groups.forEach(function (g) { for (var i = 1; i < g.runs.length; i += 2) { total += g.runs[i]; } });
  var cShape = new Int32Array(total), cFeat = new Int32Array(total), cGroup = new Int32Array(total);
  (function () {
    var n = 0;
    groups.forEach(function (g, gi) {
      var pos = 0;
      for (var i = 0; i + 1 < g.runs.length; i += 2) {
        var start = pos + g.runs[i], end = start + g.runs[i + 1];
        for (var code = start; code !== end; code++) {
          cShape[n] = Math.floor(code / NF); cFeat[n] = code % NF; cGroup[n] = gi; n++;
        }
        pos = end;
      }
    });
  })();
  mark("decoded");
  var changeOf = {};
  var removedMarks = [];
  if (D.diff) {
    D.diff.marks.forEach(function (m) {
      var kind = str(m[2]);
      changeOf[m[0] * NF + m[1]] = kind;
      if (kind === "removed") { removedMarks.push(m); }
    });
  }
  function comboChange(i) { return changeOf[cShape[i] * NF + cFeat[i]]; }

  function rolesOf(rolesetIndex) { return D.rolesets[rolesetIndex].map(function (r) { return D.roles[r]; }); }
  function prLabel(i) { return str(D.prs[i][0]); }
  function prNodes(prIdx) {
    var out = [];
    prIdx.forEach(function (p, k) {
      var row = D.prs[p];
      if (k) { out.push(text(", ")); }
      out.push(link(str(row[1]), str(row[0])));
      row[2].forEach(function (r) {
        var run = D.runs[r];
        var label = "run " + run[0] + (run[1] > 1 ? " attempt " + run[1] : "") + (str(run[2]) ? " (" + str(run[2]) + ")" : "");
        out.push(text(" · "));
        out.push(link(str(run[3]), label));
      });
    });
    return out;
  }

  /* ---- search text, per group / shape / feature set (built on first use) ----- */
  var rolesetText = {};
  function evrefPrs(e, prs) { D.evrefs[e][1].forEach(function (p) { prs.push(prLabel(p)); }); }
  function rolesetTexts(ri) {
    var cached = rolesetText[ri];
    if (cached) { return cached; }
    // Per-flag evidence records are left out of the search text (too many); their PRs are in.
    var flags = [], prs = [], seen = {};
    rolesOf(ri).forEach(function (role) {
      role[2].forEach(function (f) {
        var fl = D.flags[f];
        flags.push(str(fl[0]) + "=" + str(fl[1]));
        fl[3].forEach(function (e) {
          D.evrefs[e][1].forEach(function (p) { if (!seen[p]) { seen[p] = true; prs.push(prLabel(p)); } });
        });
      });
    });
    cached = rolesetText[ri] = { flags: flags.join("\n"), prs: prs };
    return cached;
  }
  function groupTexts(g) {
    var rs = rolesetTexts(g.roleset);
    var prs = rs.prs.slice(), reasons = [], records = [];
    g.evidence.forEach(function (e) { records.push(str(D.evrefs[e][0])); evrefPrs(e, prs); });
    g.reasons.forEach(function (r) {
      var row = D.reasons[r];
      reasons.push(str(row[0]) + " " + (str(row[2]) || "") + " " + str(row[6]));
      row[5].forEach(function (src) { prs.push(str(src)); });
    });
    g.nearest.forEach(function (n) {
      var row = D.nearest[n];
      records.push(str(row[0]), str(row[1]));
      row[2].forEach(function (p) { prs.push(prLabel(p)); });
    });
    var seen = {}, uniquePrs = [];
    prs.forEach(function (p) { if (!seen[p]) { seen[p] = true; uniquePrs.push(p.toLowerCase()); } });
    return {
      flags: rs.flags.toLowerCase(),
      prs: uniquePrs,
      all: [rs.flags, uniquePrs.join("\n"), reasons.join("\n"), records.join("\n"), g.guide ? "guide-only" : "recommended", g.declared || ""].join("\n").toLowerCase()
    };
  }
  var gText = null, sText = null, fText = null;
  function buildIndex() {
    if (gText) { return; }
    gText = groups.map(groupTexts);
    sText = shapes.map(function (sh) { return (sh.label + "\n" + sh.col + "\n" + sh.family).toLowerCase(); });
    fText = feats.map(function (f) { return (f.col + "\n" + f.suffix).toLowerCase(); });
  }

  function prMatches(list, term) {
    var num = term.replace(/^#/, "");
    return list.some(function (p) {
      if (/^[0-9]+$/.test(num)) { return p.slice(-(num.length + 1)) === "#" + num; }
      return p.indexOf(term) !== -1;
    });
  }
  /* A term is "field:value" (flag, hw, variant, pr, reason) or free text; all terms must match. */
  function parseFilter(q) {
    return q.toLowerCase().split(/\s+/).filter(Boolean).map(function (t) {
      var m = /^(flag|hw|hardware|variant|pr|reason|feature):(.*)$/.exec(t);
      return m ? { field: m[1] === "hardware" ? "hw" : m[1], value: m[2] } : { field: "", value: t };
    }).filter(function (t) { return t.value !== ""; });
  }
  function termMasks(term) {
    buildIndex();
    var v = term.value, f = term.field;
    var G = gText.map(function (t, i) {
      if (f === "flag") { return t.flags.indexOf(v) !== -1; }
      if (f === "pr") { return prMatches(t.prs, v); }
      if (f === "reason") { return groups[i].reasons.some(function (r) { return str(D.reasons[r][0]).indexOf(v) !== -1; }); }
      if (f === "") { return t.all.indexOf(v) !== -1 || prMatches(t.prs, v); }
      return false;
    });
    var Sh = shapes.map(function (sh, i) {
      if (f === "hw") { return sh.hw.toLowerCase() === v; }
      if (f === "variant") { return sh.variant.toLowerCase() === v; }
      if (f === "") { return sText[i].indexOf(v) !== -1; }
      return false;
    });
    var F = fText.map(function (t) { return (f === "" || f === "feature") && t.indexOf(v) !== -1; });
    return { G: G, S: Sh, F: F };
  }

  /* ---- state --------------------------------------------------------------- */
  var state = { cols: "shape", filter: "", onlyChanged: false, view: "matrix", cell: null, showReproduced: false };
  var cells = {};          // cell id -> aggregate
  var matched = null;      // Uint8Array of combos passing the filter
  var lastFocus = null;

  var rowOf = (function () {
    var index = {};
    return shapes.map(function (sh) {
      var k = sh.recipe + "|" + sh.family + "|" + sh.variant + "@" + sh.hw;
      if (!(k in index)) { index[k] = Object.keys(index).length; }
      return index[k];
    });
  })();
  function colOf(i) { return state.cols === "features" ? feats[cFeat[i]].col : shapes[cShape[i]].col; }
  function cellId(sh, col) { return str(D.recipes[sh.recipe]) + "|" + sh.family + "|" + sh.variant + "@" + sh.hw + "|" + col; }

  function computeFilter() {
    var terms = parseFilter(state.filter);
    matched = new Uint8Array(total);
    var masks = terms.map(termMasks);
    for (var i = 0; i !== total; i++) {
      var ok = true;
      for (var t = 0; t !== masks.length && ok; t++) {
        var m = masks[t];
        ok = m.G[cGroup[i]] || m.S[cShape[i]] || m.F[cFeat[i]];
      }
      matched[i] = ok ? 1 : 0;
    }
  }

  function aggregate() {
    cells = {};
    function cellFor(sh, col) {
      var id = cellId(sh, col);
      var c = cells[id];
      if (!c) {
        c = cells[id] = { id: id, recipe: sh.recipe, family: sh.family, variant: sh.variant, hw: sh.hw, col: col,
          rec: 0, guide: 0, declared: 0, unreachable: 0, near: -1, groups: {}, changes: {}, removed: [] };
      }
      return c;
    }
    // A cell is fixed by the shape (shape columns) or by the row and feature set.
    var memo = new Map(), byFeature = state.cols === "features";
    for (var i = 0; i !== total; i++) {
      if (!matched[i]) { continue; }
      var g = groups[cGroup[i]], s = cShape[i];
      var key = byFeature ? rowOf[s] * NF + cFeat[i] : s;
      var c = memo.get(key);
      if (c === undefined) { c = cellFor(shapes[s], colOf(i)); memo.set(key, c); }
      if (g.guide) {
        c.guide++;
        if (g.declared) { c.declared++; }
        if (g.unreachable) { c.unreachable++; }
        if (g.dist !== -1 && (c.near === -1 || g.dist < c.near)) { c.near = g.dist; }
      } else { c.rec++; }
      c.groups[cGroup[i]] = (c.groups[cGroup[i]] || 0) + 1;
      if (D.diff) {
        var ch = comboChange(i);
        if (ch) { c.changes[ch] = (c.changes[ch] || 0) + 1; }
      }
    }
    var terms = parseFilter(state.filter);
    removedMarks.forEach(function (m) {
      var sh = shapes[m[0]];
      var label = sh.label + feats[m[1]].suffix;
      if (!terms.every(function (t) { return label.toLowerCase().indexOf(t.value) !== -1; })) { return; }
      var c = cellFor(sh, state.cols === "features" ? feats[m[1]].col : sh.col);
      c.removed.push(label);
      c.changes.removed = (c.changes.removed || 0) + 1;
    });
    if (state.onlyChanged) {
      Object.keys(cells).forEach(function (id) { if (!Object.keys(cells[id].changes).length) { delete cells[id]; } });
    }
  }

  function cellClass(c) {
    if (c.rec + c.guide === 0) { return "removed-only"; }
    if (c.guide === 0) { return "rec"; }
    /* No recipe edit reaches evidence for any cell: grouped apart (the section after the matrices). */
    if (c.rec === 0 && c.unreachable === c.guide) { return "unreachable"; }
    if (c.rec === 0) { return c.declared === c.guide ? "declared" : "guide"; }
    return "mixed";
  }
  var ICON = { rec: "✔", guide: "✖", declared: "◆", unreachable: "⊘", mixed: "◐", "removed-only": "−" };
  function changeText(c) {
    return Object.keys(c.changes).sort().map(function (k) { return c.changes[k] + " " + k; }).join(", ");
  }
  function cellLabel(c) {
    var parts = [c.variant + " on " + c.hw + ", " + c.family + " " + c.col + ":",
      c.rec + " recommended,", c.guide + " guide-only" + (c.declared ? " (" + c.declared + " declared)" : "") +
      (c.unreachable ? " (" + c.unreachable + " unreachable: no recipe edit reaches evidence)" : "")];
    var label = parts.join(" ");
    if (c.guide) { label += c.near === -1 ? "; no nearest evidence" : "; nearest evidence differs in " + c.near + (c.near === 1 ? " flag" : " flags"); }
    var ch = changeText(c);
    if (ch) { label += "; changed: " + ch; }
    return label;
  }

  /* ---- page skeleton --------------------------------------------------------- */
  clear(app);
  var summary = D.meta.summary;
  app.appendChild(el("section", { "aria-label": "Summary" }, [
    el("div", { cls: "summary" }, [
      stat("combinations", summary.combinations), stat("recommended", summary.recommended),
      stat("guide-only", summary.guide_only), stat("declared", summary.declared),
      stat("undeclared guide-only", summary.undeclared_guide_only),
      el("span", { cls: "stat" }, [text("tool " + str(D.meta.tool_version) + (str(D.meta.ledger) ? " · " + str(D.meta.ledger) : "") + (str(D.meta.recipes) ? " · " + str(D.meta.recipes) : "") + (D.meta.offline ? " · offline" : ""))])
    ]),
    reasonChips(summary.by_reason),
    listOf("notices", D.meta.notices.map(function (n) { return text(str(n)); })),
    D.claims.length ? el("h2", { cls: "claims-title", text: "Claims the evidence does not back (" + D.claims.length + ")" }) : null,
    listOf("claims", D.claims.map(function (c) {
      return text(str(c[0]) + " · " + str(c[1]) + ": " + str(c[2]) + ", " + c[3] + " recommended" + (str(c[4]) ? " — " + str(c[4]) : ""));
    })),
    D.diff ? diffSummary() : null
  ]));
  function stat(label, n) { return el("span", { cls: "stat" }, [el("strong", { text: String(n) }), text(" " + label)]); }
  function reasonChips(byReason) {
    var keys = Object.keys(byReason || {});
    if (!keys.length) { return null; }
    return el("div", { cls: "chips", "aria-label": "Guide-only combinations by reason" },
      keys.sort().map(function (k) { return el("span", { cls: "chip", text: k + ": " + byReason[k] }); }));
  }
  function listOf(cls, items) {
    if (!items.length) { return null; }
    return el("ul", { cls: cls }, items.map(function (i) { return el("li", null, [i]); }));
  }
  function diffSummary() {
    var counts = {};
    D.diff.marks.forEach(function (m) { var k = str(m[2]); counts[k] = (counts[k] || 0) + 1; });
    D.diff.unplaced.forEach(function (u) { var k = str(u[1]); counts[k] = (counts[k] || 0) + 1; });
    var head = "Diff " + (str(D.diff.base) || "base") + " → " + (str(D.diff.head) || "head") + ": " +
      (Object.keys(counts).sort().map(function (k) { return counts[k] + " " + k; }).join(", ") || "no changes");
    var box = el("div", { cls: "diff" }, [el("strong", { text: head })]);
    if (D.diff.unplaced.length) {
      box.appendChild(el("details", null, [el("summary", { text: "Changes not placed in a cell (" + D.diff.unplaced.length + ")" }),
        el("ul", null, D.diff.unplaced.map(function (u) { return el("li", null, [el("code", { text: str(u[0]) }), text(" — " + str(u[1]))]); }))]));
    }
    return box;
  }

  var filterInput = el("input", { type: "search", id: "filter", "aria-describedby": "filter-hint", placeholder: "flag:kv_cache_dtype=fp8  hw:b200  pr:2120  or any text" });
  var colsSelect = el("select", { id: "cols" }, [
    el("option", { value: "shape", text: "deployment shape (strategy / P-D parallelism)" }),
    el("option", { value: "features", text: "feature / mode selections" })
  ]);
  var changedBox = D.diff ? el("input", { type: "checkbox", id: "only-changed" }) : null;
  var status = el("span", { cls: "status", role: "status", "aria-live": "polite" });
  app.appendChild(el("div", { cls: "toolbar", role: "search" }, [
    el("label", { "for": "filter", text: "Filter" }), filterInput,
    el("label", { "for": "cols", text: "Columns" }), colsSelect,
    changedBox ? el("span", null, [changedBox, el("label", { "for": "only-changed", text: " only changed cells" })]) : null,
    status
  ]));
  app.appendChild(el("p", { id: "filter-hint", cls: "hint",
    text: "Space-separated terms, all must match: free text, or flag:KEY[=VALUE], hw:ID, variant:NAME, pr:N, reason:CODE, feature:NAME. In a matrix, arrow keys move between cells; Enter or Space opens a cell; Escape closes the panel." }));

  var tabMatrix = el("button", { role: "tab", id: "tab-matrix", "aria-controls": "view-matrix", type: "button", text: "Evidence matrix" });
  var notRepro = D.reverse.filter(function (r) { return str(r[3]) !== "reproduced"; }).length;
  var tabReverse = el("button", { role: "tab", id: "tab-reverse", "aria-controls": "view-reverse", type: "button", text: "Evidence the recipe cannot reproduce (" + notRepro + ")" });
  app.appendChild(el("div", { cls: "tabs", role: "tablist", "aria-label": "Views" }, [tabMatrix, tabReverse]));

  var legend = el("div", { cls: "legend", "aria-label": "Legend" }, [
    legendItem("rec", "all recommended"), legendItem("mixed", "some recommended, some guide-only"),
    legendItem("guide", "guide-only"), legendItem("declared", "guide-only, all declared"),
    legendItem("unreachable", "guide-only, unreachable: no recipe edit reaches evidence"),
    D.diff ? el("span", null, [el("span", { cls: "swatch cell rec changed", "aria-hidden": "true" }), text(" changed in the diff")]) : null,
    el("span", null, [el("span", { cls: "swatch", "aria-hidden": "true", text: "·" }), text("not selectable / no match")]),
    el("span", null, [el("span", { cls: "swatch", "aria-hidden": "true", text: "≈2" }), text("nearest evidence differs in 2 flags (∅: none in scope)")])
  ]);
  function legendItem(cls, label) {
    return el("span", null, [el("span", { cls: "swatch cell " + cls, "aria-hidden": "true", text: ICON[cls] }), text(label)]);
  }
  var matrices = el("div", { cls: "matrices", id: "matrices" });
  var detail = el("aside", { cls: "detail", id: "detail", hidden: true, "aria-labelledby": "detail-title", tabindex: "-1" });
  var viewMatrix = el("section", { id: "view-matrix", role: "tabpanel", "aria-labelledby": "tab-matrix" }, [
    legend, el("div", { cls: "layout" }, [matrices, detail])
  ]);
  var reverseBody = el("div");
  var reproducedBox = el("input", { type: "checkbox", id: "show-reproduced" });
  var viewReverse = el("section", { id: "view-reverse", role: "tabpanel", "aria-labelledby": "tab-reverse", hidden: true }, [
    el("p", { cls: "hint", text: "In-scope evidence points (InferenceX configs) and whether some recipe combination reproduces them; those it cannot, and why." }),
    el("span", null, [reproducedBox, el("label", { "for": "show-reproduced", text: " also show reproduced points" })]),
    reverseBody
  ]);
  app.appendChild(viewMatrix);
  app.appendChild(viewReverse);

  /* ---- matrices ---------------------------------------------------------------- */
  function renderMatrices() {
    clear(matrices);
    var recipes = {}, familyOrder = D.families.slice();
    Object.keys(cells).forEach(function (id) {
      var c = cells[id];
      var r = recipes[c.recipe] = recipes[c.recipe] || {};
      var f = r[c.family] = r[c.family] || { rows: {}, cols: {} };
      f.rows[c.variant + "@" + c.hw] = [c.variant, c.hw];
      f.cols[c.col] = true;
      if (familyOrder.indexOf(c.family) === -1) { familyOrder.push(c.family); }
    });
    var variantOrder = [];
    shapes.forEach(function (sh) { if (variantOrder.indexOf(sh.variant) === -1) { variantOrder.push(sh.variant); } });
    var any = false;
    Object.keys(recipes).map(Number).sort(function (a, b) { return a - b; }).forEach(function (ri) {
      var recipe = str(D.recipes[ri]);
      if (D.recipes.length > 1) { matrices.appendChild(el("h2", { text: recipe })); }
      familyOrder.forEach(function (family) {
        var f = recipes[ri][family];
        if (!f) { return; }
        any = true;
        var rows = Object.keys(f.rows).map(function (k) { return f.rows[k]; }).sort(function (a, b) {
          return variantOrder.indexOf(a[0]) - variantOrder.indexOf(b[0]) || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
        });
        var cols = Object.keys(f.cols).sort(colCompare);
        matrices.appendChild(matrixTable(recipe, ri, family, rows, cols));
      });
    });
    if (!any) { matrices.appendChild(el("p", { cls: "none", text: "No combination matches." })); }
  }
  function colCompare(a, b) {
    var na = a === "(no features)" ? -1 : a.split(" ").length, nb = b === "(no features)" ? -1 : b.split(" ").length;
    if (state.cols === "features" && na !== nb) { return na - nb; }
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function matrixTable(recipe, ri, family, rows, cols) {
    var headId = "m-" + ri + "-" + family.replace(/[^A-Za-z0-9_-]/g, "_");
    var grid = [];
    var table = el("table", { cls: "matrix", "aria-labelledby": headId });
    table.appendChild(el("thead", null, [el("tr", null, [el("th", { scope: "col", text: "variant · hardware" })].concat(
      cols.map(function (c) { return el("th", { scope: "col", text: c }); })))]));
    var tbody = el("tbody");
    rows.forEach(function (row, y) {
      var tr = el("tr", null, [el("th", { scope: "row", text: row[0] + " · " + row[1] })]);
      grid.push([]);
      cols.forEach(function (col, x) {
        var id = recipe + "|" + family + "|" + row[0] + "@" + row[1] + "|" + col;
        var c = cells[id];
        if (!c) { tr.appendChild(el("td", { cls: "empty", text: "·", title: "no combination" })); grid[y].push(null); return; }
        var k = cellClass(c);
        var counts = [];
        if (c.rec) { counts.push("✔" + c.rec); }
        if (c.guide) { counts.push((k === "declared" || k === "unreachable" ? ICON[k] : "✖") + c.guide); }
        if (!c.rec && !c.guide) { counts.push("removed " + c.removed.length); }
        var near = c.guide ? (c.near === -1 ? "∅" : "≈" + c.near) : "";
        var label = cellLabel(c);
        var btn = el("button", {
          type: "button", cls: "cell " + k + (Object.keys(c.changes).length ? " changed" : ""),
          "data-cell": id, "data-x": String(x), "data-y": String(y), "aria-label": label,
          "aria-pressed": state.cell === id ? "true" : "false", tabindex: "-1", title: label
        }, [el("span", { cls: "counts", "aria-hidden": "true", text: counts.join(" ") }),
          near ? el("span", { cls: "near", "aria-hidden": "true", text: near }) : null]);
        tr.appendChild(el("td", null, [btn]));
        grid[y].push(btn);
      });
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    // One listener per table (there can be thousands of cells).
    function cellOf(e) {
      var b = e.target && e.target.closest ? e.target.closest("button.cell") : null;
      return b && table.contains(b) ? b : null;
    }
    table.addEventListener("click", function (e) {
      var b = cellOf(e);
      if (b) { openCell(b.getAttribute("data-cell"), b, true); }
    });
    table.addEventListener("keydown", function (e) {
      var b = cellOf(e);
      if (b) { gridKey(e, grid, Number(b.getAttribute("data-x")), Number(b.getAttribute("data-y"))); }
    });
    var first = null;
    grid.some(function (r) { return r.some(function (b) { if (b) { first = b; } return !!b; }); });
    if (first) { first.setAttribute("tabindex", "0"); }
    var label = family + (D.recipes.length > 1 ? " — " + recipe : "");
    return el("section", { cls: "family" }, [
      el("h2", { id: headId, text: label }),
      el("div", { cls: "matrix-wrap" }, [table])
    ]);
  }
  /* Arrow keys move to the next cell with combinations in that direction; Home/End to the row's ends. */
  function gridKey(e, grid, x, y) {
    var dx = 0, dy = 0, nx = x, ny = y, target = null;
    if (e.key === "ArrowRight") { dx = 1; } else if (e.key === "ArrowLeft") { dx = -1; }
    else if (e.key === "ArrowDown") { dy = 1; } else if (e.key === "ArrowUp") { dy = -1; }
    else if (e.key === "Home") { nx = -1; dx = 1; } else if (e.key === "End") { nx = grid[y].length; dx = -1; }
    else { return; }
    e.preventDefault();
    for (;;) {
      nx += dx; ny += dy;
      if (ny < 0 || ny >= grid.length || nx < 0 || nx >= grid[ny].length) { break; }
      if (grid[ny][nx]) { target = grid[ny][nx]; break; }
    }
    if (!target || target === grid[y][x]) { return; }
    grid[y][x].setAttribute("tabindex", "-1");
    target.setAttribute("tabindex", "0");
    target.focus();
  }

  /* ---- detail panel -------------------------------------------------------------- */
  function openCell(id, fromButton, focus) {
    var c = cells[id];
    if (!c) { return; }
    state.cell = id;
    lastFocus = fromButton || lastFocus;
    Array.prototype.forEach.call(matrices.querySelectorAll("button.cell[aria-pressed=\"true\"]"), function (b) { b.setAttribute("aria-pressed", "false"); });
    var pressed = findCellButton(id);
    if (pressed) { pressed.setAttribute("aria-pressed", "true"); }
    clear(detail);
    detail.hidden = false;
    var title = el("h2", { id: "detail-title", tabindex: "-1", text: c.variant + " · " + c.hw + " · " + c.family + " · " + c.col });
    var close = el("button", { type: "button", text: "Close", "aria-label": "Close the detail panel" });
    close.addEventListener("click", closeCell);
    detail.appendChild(el("div", { cls: "detail-head" }, [title, close]));
    detail.appendChild(el("p", { text: cellLabel(c) }));
    var order = Object.keys(c.groups).map(Number).sort(function (a, b) {
      var ga = groups[a], gb = groups[b];
      return (gb.guide - ga.guide) || ((ga.declared ? 1 : 0) - (gb.declared ? 1 : 0)) || (c.groups[b] - c.groups[a]) || a - b;
    });
    var members = membersOf(c);
    order.forEach(function (gi) { detail.appendChild(groupView(gi, c.groups[gi], members[gi] || [])); });
    if (c.removed.length) {
      detail.appendChild(el("section", { cls: "group" }, [
        el("h3", null, [el("span", { cls: "badge change", text: "removed" }), text(c.removed.length + " combinations no longer selectable")]),
        el("ul", { cls: "combos" }, c.removed.map(function (l) { return el("li", null, [el("code", { text: l })]); }))
      ]));
    }
    updateHash();
    if (focus) { title.focus(); }
  }
  function findCellButton(id) {
    var all = matrices.querySelectorAll("button.cell");
    for (var i = 0; i !== all.length; i++) { if (all[i].getAttribute("data-cell") === id) { return all[i]; } }
    return null;
  }
  function closeCell() {
    state.cell = null;
    detail.hidden = true;
    clear(detail);
    Array.prototype.forEach.call(matrices.querySelectorAll("button.cell[aria-pressed=\"true\"]"), function (b) { b.setAttribute("aria-pressed", "false"); });
    updateHash();
    if (lastFocus && document.body.contains(lastFocus)) { lastFocus.focus(); }
  }
  detail.addEventListener("keydown", function (e) { if (e.key === "Escape") { e.preventDefault(); closeCell(); } });

  function membersOf(c) {
    var out = {};
    for (var i = 0; i !== total; i++) {
      if (!matched[i]) { continue; }
      var sh = shapes[cShape[i]];
      if (sh.variant !== c.variant || sh.hw !== c.hw || sh.family !== c.family || sh.recipe !== c.recipe || colOf(i) !== c.col) { continue; }
      (out[cGroup[i]] = out[cGroup[i]] || []).push(i);
    }
    return out;
  }

  function groupView(gi, count, members) {
    var g = groups[gi];
    var box = el("section", { cls: "group", "data-group": String(gi) });
    var head = el("h3", null, [
      el("span", { cls: "badge " + (g.guide ? "guide" : "rec"), text: g.guide ? "✖ guide-only" : "✔ recommended" }),
      g.declared ? el("span", { cls: "badge declared", text: "◆ declared: " + g.declared }) : null,
      text(" " + count + (count === 1 ? " combination" : " combinations"))
    ]);
    box.appendChild(head);
    var list = el("ul", { cls: "combos" });
    members.slice(0, LIST_LIMIT).forEach(function (i) {
      var ch = comboChange(i);
      list.appendChild(el("li", null, [el("code", { text: shapes[cShape[i]].label + feats[cFeat[i]].suffix }),
        ch ? text(" ") : null, ch ? el("span", { cls: "badge change", text: ch }) : null]));
    });
    if (members.length > LIST_LIMIT) { list.appendChild(el("li", { cls: "none", text: "… and " + (members.length - LIST_LIMIT) + " more (narrow them with the filter)" })); }
    box.appendChild(el("details", { open: members.length <= 12 ? true : null }, [el("summary", { text: "Combinations (" + members.length + ")" }), list]));

    if (g.reasons.length) {
      box.appendChild(el("h4", { text: "Why guide-only" }));
      box.appendChild(el("ul", { cls: "reasons" }, g.reasons.map(function (r) { return reasonItem(D.reasons[r]); })));
    }
    rolesOf(g.roleset).forEach(function (role) { box.appendChild(roleView(role)); });
    if (g.evidence.length) {
      box.appendChild(el("h4", { text: "Evidence behind the verdict" }));
      box.appendChild(el("ul", null, g.evidence.map(function (e) { return el("li", null, evrefNodes(e)); })));
    }
    if (g.nearest.length) {
      box.appendChild(el("h4", { text: "Nearest evidence" }));
      g.nearest.forEach(function (n) { box.appendChild(nearestView(D.nearest[n])); });
    }
    return box;
  }
  function reasonItem(r) {
    var parts = [el("strong", { cls: "reason-code", text: str(r[0]) })];
    if (str(r[1])) { parts.push(text(" · role " + str(r[1]))); }
    if (str(r[2])) { parts.push(text(" · flag "), el("code", { text: str(r[2]) })); }
    if (str(r[3]) !== null || str(r[4]) !== null) {
      parts.push(text(" · recipe "), el("code", { text: str(r[3]) === null ? "(unset)" : str(r[3]) }),
        text(", evidence "), el("code", { text: str(r[4]) === null ? "(unset)" : str(r[4]) }));
    }
    if (str(r[6])) { parts.push(text(" — "), el("span", { cls: "reason-detail", text: str(r[6]) })); }
    var sources = r[5].map(str);
    if (sources.length) {
      parts.push(text(" · sources: "));
      sources.forEach(function (src, k) {
        if (k) { parts.push(text(", ")); }
        var pi = -1;
        r[7].forEach(function (idx) { if (str(D.prs[idx][0]) === src) { pi = idx; } });
        if (pi !== -1) { prNodes([pi]).forEach(function (n) { parts.push(n); }); } else { parts.push(el("code", { text: src })); }
      });
    }
    return el("li", null, parts);
  }
  function evrefNodes(e) {
    var r = D.evrefs[e];
    var out = [recordNode(str(r[0]))];
    if (r[1].length) { out.push(text(" ")); out = out.concat(prNodes(r[1])); }
    return out;
  }
  /* Evidence references grouped by PR: each PR (with its sweep runs) once, its records folded. */
  function evidenceByPr(evrefs) {
    var order = [], byPr = {};
    evrefs.forEach(function (e) {
      var r = D.evrefs[e];
      var keys = r[1].length ? r[1].map(String) : ["none"];
      keys.forEach(function (k) {
        if (!byPr[k]) { byPr[k] = []; order.push(k); }
        if (byPr[k].indexOf(str(r[0])) === -1) { byPr[k].push(str(r[0])); }
      });
    });
    var out = [];
    order.forEach(function (k, i) {
      var records = byPr[k];
      var line = el("div", { cls: "evidence-pr" });
      if (k === "none") { line.appendChild(text("no PR linked")); } else { prNodes([Number(k)]).forEach(function (n) { line.appendChild(n); }); }
      var list = el("details", null, [el("summary", { text: records.length + (records.length === 1 ? " record" : " records") })]);
      records.forEach(function (rec, j) { if (j) { list.appendChild(text(" ")); } list.appendChild(recordNode(rec)); });
      line.appendChild(list);
      out.push(line);
    });
    return out;
  }
  function roleView(role) {
    var name = str(role[0]) + (role[1] !== -1 ? " (node " + role[1] + ")" : "");
    var wrap = el("div", { cls: "role" }, [el("h4", { text: "Role " + name + ": major flags" })]);
    if (!role[2].length) { wrap.appendChild(el("p", { cls: "none", text: "no major flags" })); return wrap; }
    var tbody = el("tbody");
    role[2].forEach(function (f) {
      var fl = D.flags[f];
      var ev = el("td");
      if (!fl[3].length) { ev.appendChild(el("span", { cls: "none", text: "no evidence in scope" })); }
      evidenceByPr(fl[3]).forEach(function (n) { ev.appendChild(n); });
      tbody.appendChild(el("tr", null, [el("td", null, [el("code", { text: str(fl[0]) })]), el("td", null, [el("code", { text: str(fl[1]) })]),
        el("td", { text: str(fl[2]) }), ev]));
    });
    wrap.appendChild(el("table", { cls: "flags" }, [
      el("thead", null, [el("tr", null, [el("th", { scope: "col", text: "flag" }), el("th", { scope: "col", text: "value" }),
        el("th", { scope: "col", text: "class" }), el("th", { scope: "col", text: "evidence (record, PR, sweep run)" })])]),
      tbody
    ]));
    return wrap;
  }
  function nearestView(n) {
    var head = el("p", null, [recordNode(str(n[0])), text(" "), el("code", { text: str(n[1]) }),
      text(str(n[3]) ? " · role " + str(n[3]) : ""), text(" · distance " + n[4] + (n[2].length ? " · " : ""))].concat(prNodes(n[2])));
    var rows = [];
    n[5].forEach(function (kv) { rows.push(["only in recipe", str(kv[0]), str(kv[1]), "(unset)"]); });
    n[6].forEach(function (kv) { rows.push(["only in evidence", str(kv[0]), "(unset)", str(kv[1])]); });
    n[7].forEach(function (kv) { rows.push(["different value", str(kv[0]), str(kv[1]), str(kv[2])]); });
    if (!rows.length) { return el("div", { cls: "nearest" }, [head, el("p", { cls: "none", text: "no flag difference" })]); }
    return el("div", { cls: "nearest" }, [head, el("table", { cls: "ndiff" }, [
      el("thead", null, [el("tr", null, ["difference", "flag", "recipe", "evidence"].map(function (h) { return el("th", { scope: "col", text: h }); }))]),
      el("tbody", null, rows.map(function (row) {
        return el("tr", null, [el("td", { text: row[0] }), el("td", null, [el("code", { text: row[1] })]),
          el("td", null, [el("code", { text: row[2] })]), el("td", null, [el("code", { text: row[3] })])]);
      }))
    ])]);
  }

  /* ---- reverse view ---------------------------------------------------------------- */
  function renderReverse() {
    clear(reverseBody);
    var terms = parseFilter(state.filter);
    var rows = D.reverse.filter(function (r) {
      if (!state.showReproduced && str(r[3]) === "reproduced") { return false; }
      var prs = r[2].map(function (p) { return prLabel(p).toLowerCase(); });
      var hay = [str(r[0]), str(r[1]), str(r[3]), str(r[5]) || "", str(r[6])].join("\n").toLowerCase();
      return terms.every(function (t) {
        if (t.field === "pr") { return prMatches(prs, t.value); }
        return hay.indexOf(t.value) !== -1 || prMatches(prs, t.value);
      });
    });
    if (!rows.length) { reverseBody.appendChild(el("p", { cls: "none", text: "No evidence point to show." })); return; }
    var statusOrder = ["not-expressible", "not-reproduced", "reproduced"];
    rows = rows.slice().sort(function (a, b) {
      var sa = statusOrder.indexOf(str(a[3])), sb = statusOrder.indexOf(str(b[3]));
      var ka = str(a[1]), kb = str(b[1]);
      return (sa - sb) || (ka < kb ? -1 : ka > kb ? 1 : 0);
    });
    reverseBody.appendChild(el("table", { cls: "rows" }, [
      el("thead", null, [el("tr", null, ["status", "config key", "record", "PRs and sweep runs", "combinations", "example", "why"].map(function (h) { return el("th", { scope: "col", text: h }); }))]),
      el("tbody", null, rows.map(function (r) {
        return el("tr", null, [el("td", { text: str(r[3]) }), el("td", { cls: "key" }, [el("code", { text: str(r[1]) })]), el("td", null, [recordNode(str(r[0]))]),
          el("td", null, prNodes(r[2])), el("td", { text: String(r[4]) }), el("td", null, [str(r[5]) ? el("code", { text: str(r[5]) }) : null]),
          el("td", { text: str(r[6]) })]);
      }))
    ]));
  }

  /* ---- wiring ------------------------------------------------------------------------ */
  function refresh() {
    computeFilter();
    mark("filtered");
    aggregate();
    mark("aggregated");
    var shown = 0;
    for (var i = 0; i !== total; i++) { shown += matched[i]; }
    status.textContent = shown + " of " + total + " combinations shown";
    renderMatrices();
    mark("drawn");
    renderReverse();
    if (state.cell && cells[state.cell]) { openCell(state.cell, null, false); } else if (state.cell) { closeCell(); }
  }
  function selectView(view, focus) {
    state.view = view;
    var isMatrix = view !== "reverse";
    tabMatrix.setAttribute("aria-selected", String(isMatrix)); tabReverse.setAttribute("aria-selected", String(!isMatrix));
    tabMatrix.setAttribute("tabindex", isMatrix ? "0" : "-1"); tabReverse.setAttribute("tabindex", isMatrix ? "-1" : "0");
    viewMatrix.hidden = !isMatrix; viewReverse.hidden = isMatrix;
    if (focus) { (isMatrix ? tabMatrix : tabReverse).focus(); }
    updateHash();
  }
  [tabMatrix, tabReverse].forEach(function (tab) {
    tab.addEventListener("click", function () { selectView(tab === tabMatrix ? "matrix" : "reverse", false); });
    tab.addEventListener("keydown", function (e) {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft" || e.key === "Home" || e.key === "End") {
        e.preventDefault();
        selectView(state.view === "reverse" ? "matrix" : "reverse", true);
      }
    });
  });
  var timer = null;
  filterInput.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.filter = filterInput.value; refresh(); updateHash(); }, 150);
  });
  colsSelect.addEventListener("change", function () { state.cols = colsSelect.value; state.cell = null; refresh(); updateHash(); });
  if (changedBox) { changedBox.addEventListener("change", function () { state.onlyChanged = changedBox.checked; refresh(); }); }
  reproducedBox.addEventListener("change", function () { state.showReproduced = reproducedBox.checked; renderReverse(); });

  function updateHash() {
    var parts = [];
    if (state.view === "reverse") { parts.push("view=reverse"); }
    if (state.cols !== "shape") { parts.push("cols=" + state.cols); }
    if (state.filter) { parts.push("filter=" + encodeURIComponent(state.filter)); }
    if (state.cell) { parts.push("cell=" + encodeURIComponent(state.cell)); }
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (hash !== location.hash && !(hash === "" && location.hash === "#")) {
      history.replaceState(null, "", hash || location.pathname + location.search);
    }
  }
  /* #view=reverse&cols=features&filter=TEXT&cell=ID — cell ids are "recipe|family|variant@hardware|column". */
  function readHash() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (p) {
      var i = p.indexOf("=");
      if (i > 0) { try { params[p.slice(0, i)] = decodeURIComponent(p.slice(i + 1)); } catch (err) { /* ignore a malformed part */ } }
    });
    state.cols = params.cols === "features" ? "features" : "shape";
    colsSelect.value = state.cols;
    state.filter = params.filter || "";
    filterInput.value = state.filter;
    state.cell = params.cell || null;
    refresh();
    selectView(params.view === "reverse" ? "reverse" : "matrix", false);
  }
  window.addEventListener("hashchange", readHash);
  readHash();
  app.setAttribute("aria-busy", "false");
  window.provenanceReport = { openCell: openCell, cells: function () { return Object.keys(cells); } };
  mark("ready");
  window.__provenanceReadyAt = performance.now();
  document.documentElement.setAttribute("data-ready", "true");
})();
