"""End to end: the HTML report in Debian's headless Chromium, driven over the DevTools Protocol.

The browser runs with networking features off and a throw-away profile; the test
talks to it over a websocket on 127.0.0.1 with the small stdlib client below. It
takes screenshots, clicks a cell with real mouse events, works the keyboard,
and reads what the detail panel shows. Load times are printed and recorded as
test properties (``-s`` or ``--junitxml`` shows them); they are never asserted.

Set ``PROVENANCE_HTML_SCREENSHOT_DIR`` to keep the screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from provenance.audit.verdicts import AuditReport, VerdictEntry
from provenance.model.reasons import VerdictKind
from provenance.report.html import ChangeKind, HtmlDiff, render_html

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
)
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TIMEOUT = 30.0
EAGLE_CELL = "MiniMaxAI/MiniMax-M3|single-node|nvfp4@b200|tp"
HOSTILE_CELL = "MiniMaxAI/MiniMax-M3|single-node|mxfp8@h200|tp"


class WebSocket:
    """The client side of RFC 6455, just enough for the DevTools Protocol (text frames)."""

    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        assert parts.scheme == "ws" and parts.hostname == "127.0.0.1", url
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            response += chunk
        head, _, self._buffer = response.partition(b"\r\n\r\n")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        if b" 101 " not in head.split(b"\r\n")[0] or accept.encode() not in head:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self._buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self._buffer)))
            if not chunk:
                raise ConnectionError("websocket closed")
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header += bytes([0x80 | size])
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", size)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", size)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                (size,) = struct.unpack(">H", self._read(2))
            elif size == 127:
                (size,) = struct.unpack(">Q", self._read(8))
            mask = self._read(4) if second & 0x80 else None
            payload = self._read(size)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Page:
    """A DevTools Protocol session with one page target."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        #: Uncaught script exceptions and security (CSP) console messages, as text.
        self.problems: list[str] = []

    def _event(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.problems.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("source") == "security":
            self.problems.append(params["entry"].get("text", ""))
        self.events.append(message)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._event(message)

    def wait_event(self, name: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            for i, event in enumerate(self.events):
                if event.get("method") == name:
                    del self.events[: i + 1]
                    return event
            self._event(json.loads(self.ws.recv()))
        raise TimeoutError(name)

    def js(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str) -> Any:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(expression)

    def open(self, url: str) -> dict[str, float]:
        """Navigate, wait until the page script has drawn everything; its timings in ms."""
        self.events.clear()
        self.problems.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        self.wait_for("document.documentElement.getAttribute('data-ready') === 'true'")
        timings: dict[str, float] = self.js(
            "(() => { const n = performance.getEntriesByType('navigation')[0];"
            " return {ready: window.__provenanceReadyAt,"
            " domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd}; })()"
        )
        return timings

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (scrolled into view first)."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()"
        )
        assert box is not None, f"no element {selector}"
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left" if kind != "mouseMoved" else "none",
                clickCount=1,
            )

    def key(self, key: str, code: str, keycode: int, text: str | None = None) -> None:
        down: dict[str, Any] = {
            "type": "keyDown",
            "key": key,
            "code": code,
            "windowsVirtualKeyCode": keycode,
        }
        if text is not None:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", **down)
        self.call(
            "Input.dispatchKeyEvent",
            type="keyUp",
            key=key,
            code=code,
            windowsVirtualKeyCode=keycode,
        )

    def text_of(self, selector: str) -> str:
        value: str = self.js(f"document.querySelector({json.dumps(selector)}).innerText")
        return value


def cell_selector(cell_id: str) -> str:
    return f"button.cell[data-cell={json.dumps(cell_id)}]"


@contextlib.contextmanager
def launch_chromium(profile: Path, log_path: Path) -> Iterator[Page]:
    """Headless Chromium with a throw-away profile, and a DevTools session with its page."""
    assert CHROMIUM is not None
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                CHROMIUM,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1440,1000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        ws: WebSocket | None = None
        try:
            port_file = profile / "DevToolsActivePort"
            deadline = time.monotonic() + TIMEOUT
            while not (port_file.exists() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chromium did not start its DevTools endpoint")
                time.sleep(0.05)
            port = int(port_file.read_text().split()[0])
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=TIMEOUT) as r:
                targets = json.load(r)
            target = next(t for t in targets if t.get("type") == "page")
            ws = WebSocket(target["webSocketDebuggerUrl"])
            page = Page(ws)
            page.call("Page.enable")
            page.call("Runtime.enable")
            page.call("Log.enable")
            page.call(
                "Emulation.setDeviceMetricsOverride",
                width=1440,
                height=1000,
                deviceScaleFactor=1,
                mobile=False,
            )
            yield page
        finally:
            if ws is not None:
                ws.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    if CHROMIUM is None:
        pytest.skip("chromium is not on PATH")
    profile = tmp_path_factory.mktemp("chromium-profile")
    log = tmp_path_factory.mktemp("chromium-log") / "stderr.txt"
    with launch_chromium(profile, log) as page:
        yield page


@pytest.fixture
def shots(tmp_path: Path) -> Callable[[Page, str], Path]:
    keep = os.environ.get("PROVENANCE_HTML_SCREENSHOT_DIR")

    def take(page: Page, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        data = page.screenshot(path)
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)
        return path

    return take


def write_page(tmp_path: Path, page: str, name: str = "report.html") -> str:
    path = tmp_path / name
    path.write_text(page, encoding="utf-8")
    return path.as_uri()


def test_click_a_cell_shows_the_reasons_of_a_guide_only_combination(
    browser: Page,
    tmp_path: Path,
    report: AuditReport,
    sweeps: dict[str, Any],
    facts: dict[str, str],
    shots: Callable[[Page, str], Path],
    record_property: Callable[[str, object], None],
) -> None:
    url = write_page(tmp_path, render_html(report, sweeps=sweeps))
    timings = browser.open(url)
    record_property("sample_ready_ms", timings["ready"])
    print(f"sample report: ready {timings['ready']:.0f} ms, load {timings['load']:.0f} ms")
    shots(browser, "matrix")
    assert browser.js("document.querySelectorAll('button.cell').length") == 6

    browser.click(cell_selector(EAGLE_CELL))
    browser.wait_for("!document.getElementById('detail').hidden")
    panel = browser.text_of("#detail")
    shots(browser, "detail")
    assert "nvfp4 · b200 · single_node_tp · 1n · +spec_decoding=eagle3" in panel
    assert "Why guide-only" in panel
    assert "flag-unevidenced" in panel
    assert "attention_config.indexer_kv_dtype" in panel
    assert facts["eagle_detail"] in panel
    assert "never-jointly-observed" in panel
    assert "minimaxm3-fp4-b200-vllm-mtp" in panel  # the nearest evidence, with its diff
    assert "only in recipe" in panel
    # The recommended combinations of the same cell are there too.
    assert "✔ recommended" in panel and "3 combinations" in panel
    links = browser.js("[...document.querySelectorAll('#detail a')].map(a => a.href)")
    assert "https://github.com/SemiAnalysisAI/InferenceX/pull/2120" in links
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/29984401390" in links
    assert browser.js("location.hash") == "#cell=" + quote(EAGLE_CELL, safe="")
    assert browser.js("document.activeElement.id") == "detail-title"


def test_keyboard_only(browser: Page, tmp_path: Path, report: AuditReport) -> None:
    browser.open(write_page(tmp_path, render_html(report)))
    browser.js(f"document.querySelector({json.dumps(cell_selector(EAGLE_CELL))}).focus()")
    browser.key("Enter", "Enter", 13, "\r")
    browser.wait_for("!document.getElementById('detail').hidden")
    assert "flag-unevidenced" in browser.text_of("#detail")
    browser.key("Escape", "Escape", 27)
    browser.wait_for("document.getElementById('detail').hidden")
    assert browser.js("document.activeElement.getAttribute('data-cell')") == EAGLE_CELL
    # Arrow keys move between cells; Space opens one.
    browser.key("ArrowDown", "ArrowDown", 40)
    moved = browser.js("document.activeElement.getAttribute('data-cell')")
    assert moved != EAGLE_CELL and moved.startswith("MiniMaxAI/MiniMax-M3|single-node|")
    browser.key(" ", "Space", 32, " ")
    browser.wait_for("!document.getElementById('detail').hidden")
    assert browser.js("document.querySelector('#detail-title').textContent").startswith(
        moved.split("|")[2].replace("@", " · ")
    )
    # Every cell is a button with an accessible name that says what it holds.
    labels = browser.js("[...document.querySelectorAll('button.cell')].map(b => b.ariaLabel)")
    assert all("recommended" in label and "guide-only" in label for label in labels)
    eagle = browser.js(f"document.querySelector({json.dumps(cell_selector(EAGLE_CELL))}).ariaLabel")
    assert eagle == (
        "nvfp4 on b200, single-node tp: 3 recommended, 1 guide-only; "
        "nearest evidence differs in 2 flags"
    )
    hostile = browser.js(
        f"document.querySelector({json.dumps(cell_selector(HOSTILE_CELL))}).ariaLabel"
    )
    assert hostile.endswith("1 guide-only (1 declared); no nearest evidence")


def test_hostile_values_are_shown_as_text(
    browser: Page, tmp_path: Path, report: AuditReport, facts: dict[str, str]
) -> None:
    browser.open(write_page(tmp_path, render_html(report)) + "#cell=" + quote(HOSTILE_CELL))
    browser.wait_for("!document.getElementById('detail').hidden")
    panel = browser.text_of("#detail")
    assert facts["hostile"] in panel
    assert "declared: mxfp8-hopper" in panel
    assert browser.js("typeof window.__pwned") == "undefined"
    assert browser.js("document.querySelectorAll('#detail img, #detail script').length") == 0


def test_reverse_view_and_filter(browser: Page, tmp_path: Path, report: AuditReport) -> None:
    browser.open(write_page(tmp_path, render_html(report)))
    browser.click("#tab-reverse")
    browser.wait_for("!document.getElementById('view-reverse').hidden")
    reverse = browser.text_of("#view-reverse")
    assert "not-expressible" in reverse and "4 × TP1 prefill workers" in reverse
    assert "not-reproduced" in reverse
    assert "minimaxm3-fp4-b200-vllm" not in reverse.replace("minimaxm3-fp4-b200-vllm-mtp", "")
    browser.click("#tab-matrix")
    browser.js("document.getElementById('filter').focus()")
    browser.call("Input.insertText", text="pr:2314")
    browser.wait_for("document.querySelector('.status').textContent.startsWith('2 of 10')")
    cells = browser.js("window.provenanceReport.cells()")
    assert cells == ["MiniMaxAI/MiniMax-M3|pd_cluster|nvfp4@b300|P dep / D tp"]


def test_full_cross_product_page(
    browser: Page,
    tmp_path: Path,
    full_report: AuditReport,
    shots: Callable[[Page, str], Path],
    record_property: Callable[[str, object], None],
) -> None:
    page = render_html(full_report)
    size = len(page.encode())
    url = write_page(tmp_path, page)
    timings = browser.open(url)
    record_property("full_page_bytes", size)
    record_property("full_ready_ms", timings["ready"])
    print(
        f"full cross-product: {size} bytes, ready {timings['ready']:.0f} ms, "
        f"load {timings['load']:.0f} ms"
    )
    assert browser.js("document.querySelector('.status').textContent").startswith("71208 of 71208")
    browser.click(cell_selector("MiniMaxAI/MiniMax-M3|pd_cluster|nvfp4@b300|P tep / D dep"))
    browser.wait_for("!document.getElementById('detail').hidden")
    assert "no evidence point on b300 sets it with pd_cluster" in browser.text_of("#detail")
    shots(browser, "full")
    browser.js("document.getElementById('cols').value = 'features'")
    browser.js("document.getElementById('cols').dispatchEvent(new Event('change'))")
    assert browser.js("document.querySelectorAll('button.cell').length") == 23 * 72 * 3


def test_diff_mode_highlights_changed_cells(
    browser: Page, tmp_path: Path, report: AuditReport
) -> None:
    diff = HtmlDiff(
        base="8959cf6",
        head="pr-735",
        changes={
            "nvfp4 · b200 · single_node_tp · 1n · +spec_decoding=eagle3": ChangeKind.FLAGS_CHANGED,
            "nvfp4 · h200 · single_node_tp · 1n": ChangeKind.REMOVED,
        },
    )
    browser.open(write_page(tmp_path, render_html(report, diff=diff)))
    changed = browser.js(
        "[...document.querySelectorAll('button.cell.changed')].map(b => b.dataset.cell)"
    )
    assert sorted(changed) == [EAGLE_CELL, "MiniMaxAI/MiniMax-M3|single-node|nvfp4@h200|tp"]
    assert "Diff 8959cf6 → pr-735: 1 flags-changed, 1 removed" in browser.text_of("#app")
    browser.click("#only-changed")
    browser.wait_for("document.querySelectorAll('button.cell').length === 2")
    browser.click(cell_selector(EAGLE_CELL))
    browser.wait_for("!document.getElementById('detail').hidden")
    assert "flags-changed" in browser.text_of("#detail")


def test_pr_page_shows_the_gate_above_the_matrices(
    browser: Page, tmp_path: Path, report: AuditReport
) -> None:
    from provenance.report.pr_html import GateCell, GateGroup, HtmlGate

    cell = GateCell(
        variant="nvfp4", hardware="b200", combinations=3, strategies=("single_node_tp",),
        nearest="InferenceX#2120",
    )  # fmt: skip
    gate = HtmlGate(
        passed=False,
        verdict="gate: FAIL — 3 regressed",
        groups=(
            GateGroup(
                category="regressed-verdict",
                subject="serve: kv_cache_dtype=fp8",
                combinations=3,
                recipes=("MiniMaxAI/MiniMax-M3",),
                cells=(cell,),
            ),
        ),
    )
    diff = HtmlDiff(base="8959cf6", head="pr-735", gate=gate)
    browser.open(write_page(tmp_path, render_html(report, diff=diff)))
    browser.wait_for("document.querySelectorAll('button.cell').length > 0")
    shown = browser.text_of("#gate")
    assert shown.startswith("gate: FAIL — 3 regressed")
    assert "Regressed: was recommended, now guide-only — 3 combination(s)" in shown
    assert "serve: kv_cache_dtype=fp8" in shown and "InferenceX#2120" in shown
    top = "document.getElementById('{}').getBoundingClientRect().top"
    assert browser.js(top.format("gate")) < browser.js(top.format("app"))


def _guide_only_example(report: AuditReport) -> tuple[str, str, VerdictEntry] | None:
    """A guide-only single-node TP combination, NVFP4 + EAGLE3 on B200 if there is one.

    Returns its cell id, its label and its verdict entry.
    """
    found: list[tuple[int, str, str, VerdictEntry]] = []
    for entry in report.verdicts:
        if entry.verdict is not VerdictKind.GUIDE_ONLY or not entry.reasons:
            continue
        for selection in entry.iter_selections():
            if selection.strategy != "single_node_tp":
                continue
            rank = (
                (selection.variant != "nvfp4")
                + (selection.hardware != "b200")
                + ("spec_decoding" not in selection.features)
            )
            cell = f"{entry.recipe}|single-node|{selection.variant}@{selection.hardware}|tp"
            found.append((rank, cell, selection.label(), entry))
    if not found:
        return None
    _, cell, label, entry = min(found, key=lambda f: f[0])
    return cell, label, entry


@pytest.mark.slow
def test_real_minimax_m3_report(
    browser: Page,
    tmp_path: Path,
    shots: Callable[[Page, str], Path],
    record_property: Callable[[str, object], None],
) -> None:
    """The audit of the real MiniMax-M3 recipe against the repository's ledger and evidence.

    Blackwell hardware only (b200, b300) to keep the audit fast; every variant,
    strategy and feature set. ``PROVENANCE_TEST_LEDGER`` / ``PROVENANCE_TEST_EVIDENCE``
    point it at another ledger and evidence store.
    """
    from provenance.audit.pipeline import AuditFilters, AuditInputs, run_audit

    project = Path(__file__).resolve().parents[2]
    ledger = Path(os.environ.get("PROVENANCE_TEST_LEDGER", project / "ledger"))
    evidence = Path(os.environ.get("PROVENANCE_TEST_EVIDENCE", project / "evidence"))
    if not any((ledger / "prs").glob("*.yaml")) or not any(evidence.glob("*/*.json")):
        pytest.skip("no ingested ledger and evidence in the repository")
    report = run_audit(
        AuditInputs(
            recipes=("MiniMaxAI/MiniMax-M3",),
            recipes_root=project / "recipes",
            ledger=ledger,
            evidence=evidence,
        ),
        AuditFilters(hardware=("b200", "b300")),
    )
    example = _guide_only_example(report)
    assert example is not None, "expected a guide-only single-node combination"
    cell, label, entry = example
    page = render_html(report)
    timings = browser.open(write_page(tmp_path, page))
    record_property("real_page_bytes", len(page.encode()))
    record_property("real_ready_ms", timings["ready"])
    print(f"MiniMax-M3 (b200, b300): {len(page.encode())} bytes, ready {timings['ready']:.0f} ms")
    shots(browser, "real-matrix")
    browser.click(cell_selector(cell))
    browser.wait_for("!document.getElementById('detail').hidden")
    shots(browser, "real-detail")
    group = browser.js(
        "[...document.querySelectorAll('#detail section.group')]"
        f".find(s => s.innerText.includes({json.dumps(label)}))?.innerText ?? null"
    )
    assert group is not None, f"{label} not listed in the panel of {cell}"
    assert "Why guide-only" in group
    for reason in entry.reasons:
        assert str(reason.code) in group
        if reason.flag:
            assert reason.flag in group


def test_unreachable_cells_are_marked_and_grouped_apart(
    browser: Page, tmp_path: Path, shots: Callable[[Page, str], Path]
) -> None:
    from unreachable_sample import RECIPE, WHY, sample

    browser.open(write_page(tmp_path, render_html(sample()), "unreachable.html"))
    browser.wait_for("document.querySelectorAll('button.cell').length === 3")
    shots(browser, "unreachable")
    unreachable = f"{RECIPE}|single-node|nvfp4@b300|tp"
    marked = browser.js(
        "[...document.querySelectorAll('button.cell.unreachable')].map(b => b.dataset.cell)"
    )
    assert marked == [unreachable]
    label = browser.js(f"document.querySelector({json.dumps(cell_selector(unreachable))}).title")
    assert "3 guide-only (3 unreachable: no recipe edit reaches evidence)" in label
    assert browser.text_of(cell_selector(unreachable)).startswith("⊘3")
    # the cell with a flag difference only stays an ordinary guide-only cell
    fixable = cell_selector(f"{RECIPE}|single-node|nvfp4@b200|tp")
    assert browser.js(f"document.querySelector({json.dumps(fixable)}).className") == "cell guide"
    assert "unreachable: no recipe edit reaches evidence" in browser.text_of(".legend")
    section = browser.text_of("#unreachable")
    assert "Unreachable groups (1)" in section and WHY in section and "b200" not in section
    assert browser.problems == []


def test_empty_report_and_no_script_errors(
    browser: Page, tmp_path: Path, make_report: Callable[..., AuditReport], report: AuditReport
) -> None:
    empty = make_report(verdicts=(), reverse=(), claims=())
    browser.open(write_page(tmp_path, render_html(empty), "empty.html"))
    assert "No combination matches." in browser.text_of("#matrices")
    assert browser.text_of("#tab-reverse").endswith("(0)")
    assert browser.problems == []
    # The full sample, worked through every view: still no exception and no CSP report.
    browser.open(write_page(tmp_path, render_html(report)))
    browser.click(cell_selector(EAGLE_CELL))
    browser.click("#tab-reverse")
    browser.click("#show-reproduced")
    assert "minimaxm3-fp4-b200-vllm" in browser.text_of("#view-reverse")
    browser.click("#tab-matrix")
    browser.js("document.getElementById('cols').value = 'features'")
    browser.js("document.getElementById('cols').dispatchEvent(new Event('change'))")
    browser.wait_for("document.querySelectorAll('button.cell').length === 8")
    assert browser.problems == []


def test_csp_blocks_any_other_script(browser: Page, tmp_path: Path, report: AuditReport) -> None:
    # Should some value ever escape into markup, the policy still refuses to run it.
    page = render_html(report).replace(
        "</body>",
        "<script>window.__evil = 1</script><img src=x onerror='window.__evil = 2'></body>",
    )
    browser.open(write_page(tmp_path, page))
    assert browser.js("typeof window.__evil") == "undefined"
    assert browser.js("document.documentElement.getAttribute('data-ready')") == "true"
    browser.wait_for("true")
    assert any("Content Security Policy" in p for p in browser.problems), browser.problems


def test_state_in_the_url_fragment(browser: Page, tmp_path: Path, report: AuditReport) -> None:
    url = write_page(tmp_path, render_html(report))
    browser.open(url + "#cols=features&filter=" + quote("hw:b200 eagle3"))
    assert browser.js("document.getElementById('filter').value") == "hw:b200 eagle3"
    assert browser.js("document.getElementById('cols').value") == "features"
    assert browser.js("window.provenanceReport.cells()") == [
        "MiniMaxAI/MiniMax-M3|single-node|nvfp4@b200|+spec_decoding=eagle3"
    ]
    browser.open(write_page(tmp_path, render_html(report), "second.html") + "#view=reverse")
    assert browser.js("document.getElementById('view-matrix').hidden") is True
    assert browser.js("document.getElementById('tab-reverse').getAttribute('aria-selected')") == (
        "true"
    )
