"""A recorded GitHub REST API on 127.0.0.1 for PyGithub to talk to (no test touches the internet).

``FakeGitHub`` serves JSON files from ``tests/github/recorded/`` (and in-memory comment
state) on an ephemeral port. It rewrites ``https://api.github.com`` in every answer to
its own address, paginates list answers the way GitHub does (``per_page``/``page`` and a
``Link`` header), and records each request so tests can look at what was asked.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parents[1] / "github" / "recorded"
REAL_API = "https://api.github.com"
SENTINEL_TOKEN = "ghp_SENTINEL0123456789abcdefSENTINEL0123"


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that gave up (timeout test) is not a failure of the fake


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


def recorded(name: str) -> Any:
    return json.loads((RECORDED / name).read_text(encoding="utf-8"))


class FakeGitHub:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[Request] = []
        self.comments: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._next_comment_id = 1_000_001
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # --- lifecycle ---------------------------------------------------------------
    @property
    def base_url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- routes ------------------------------------------------------------------
    def add(self, method: str, path: str, handler: Handler | Response | str) -> None:
        """Serve ``handler`` for ``METHOD path``; a string names a recorded JSON file."""
        if isinstance(handler, str):
            body = recorded(handler)
            self.routes[(method, path)] = lambda _req: Response(200, body)
        elif isinstance(handler, Response):
            fixed = handler
            self.routes[(method, path)] = lambda _req: fixed
        else:
            self.routes[(method, path)] = handler

    def fail_everything(self, response: Response) -> None:
        """Answer every request with ``response`` (error-path tests)."""
        self.routes.clear()
        self.routes[("*", "*")] = lambda _req: response

    def serve_comments(self, repo: str, number: int, initial: list[dict[str, Any]]) -> None:
        """Stateful issue comments: list, create, get and edit."""
        self.comments[(repo, number)] = [dict(c) for c in initial]
        base = f"/repos/{repo}/issues"

        def listing(_req: Request) -> Response:
            return Response(200, self.comments[(repo, number)])

        def create(req: Request) -> Response:
            comment = self._comment(repo, number, req.body["body"])
            self.comments[(repo, number)].append(comment)
            return Response(201, comment)

        self.add("GET", f"{base}/{number}/comments", listing)
        self.add("POST", f"{base}/{number}/comments", create)
        self._comment_prefix = f"{base}/comments/"

    def _comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        self._next_comment_id += 1
        cid = self._next_comment_id
        return {
            "id": cid,
            "url": f"{REAL_API}/repos/{repo}/issues/comments/{cid}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{REAL_API}/repos/{repo}/issues/{number}",
            "body": body,
            "user": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
            "created_at": "2026-11-30T08:00:00Z",
            "updated_at": "2026-11-30T08:00:00Z",
        }

    def _comment_by_id(self, req: Request) -> Response | None:
        prefix = getattr(self, "_comment_prefix", None)
        if prefix is None or not req.path.startswith(prefix):
            return None
        cid = int(req.path[len(prefix) :])
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == cid:
                    if req.method == "PATCH":
                        comment["body"] = req.body["body"]
                        comment["updated_at"] = "2026-11-30T09:00:00Z"
                    return Response(200, comment)
        return Response(404, {"message": "Not Found"})

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and r.path == path)

    # --- serving -----------------------------------------------------------------
    def _dispatch(self, req: Request) -> Response:
        self.requests.append(req)
        if ("*", "*") in self.routes:
            return self.routes[("*", "*")](req)
        handler = self.routes.get((req.method, req.path))
        if handler is not None:
            return handler(req)
        by_id = self._comment_by_id(req)
        if by_id is not None:
            return by_id
        return Response(
            404,
            {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"},
        )

    def _paginate(self, req: Request, resp: Response) -> Response:
        body = resp.body
        per_page = int(req.query.get("per_page", "30"))
        page = int(req.query.get("page", "1"))
        if isinstance(body, list):
            items, wrap = body, None
        elif isinstance(body, dict) and "total_count" in body:
            key = next(k for k, v in body.items() if isinstance(v, list))
            items, wrap = body[key], key
        else:
            return resp
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = dict(resp.headers)
        if page * per_page < len(items):
            query = dict(req.query, page=str(page + 1), per_page=str(per_page))
            nxt = f"{REAL_API}{req.path}?{urllib.parse.urlencode(query)}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        paged: Any = chunk if wrap is None else dict(body, **{wrap: chunk})
        return Response(resp.status, paged, headers)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                req = Request(self.command, url.path, query, dict(self.headers), body)
                resp = fake._dispatch(req)
                if self.command == "GET" and resp.status == 200:
                    resp = fake._paginate(req, resp)
                text = "" if resp.body is None else json.dumps(resp.body)
                data = text.replace(REAL_API, fake.base_url).encode()
                self.send_response(resp.status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in resp.headers.items():
                    self.send_header(name, value.replace(REAL_API, fake.base_url))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve  # noqa: N815 (http.server names)

        return _Handler


def serve_pr_2120(fake: FakeGitHub) -> None:
    """The recorded answers for SemiAnalysisAI/InferenceX#2120 and its Run Sweep runs."""
    repo = "/repos/SemiAnalysisAI/InferenceX"
    fake.add("GET", f"{repo}/pulls/2120", "inferencex-pull-2120.json")
    fake.add("GET", f"{repo}/pulls/2120/commits", "inferencex-pull-2120-commits.json")
    fake.add(
        "GET",
        f"{repo}/actions/workflows/run-sweep.yml/runs",
        "inferencex-run-sweep-runs-wzhao-m3-b300-update-2.json",
    )
    for run_id in (29984401390, 39900000003):
        fake.add("GET", f"{repo}/actions/runs/{run_id}", f"inferencex-run-{run_id}.json")
        fake.add("GET", f"{repo}/actions/runs/{run_id}/jobs", f"inferencex-run-{run_id}-jobs.json")
    rerun = f"{repo}/actions/runs/39900000006/attempts/1"
    fake.add("GET", rerun, "inferencex-run-39900000006-attempt-1.json")
    fake.add("GET", f"{rerun}/jobs", "inferencex-run-39900000006-attempt-1-jobs.json")


def serve_recipes_682(fake: FakeGitHub) -> None:
    """The recorded answers for vllm-project/recipes#682 (body, commits, comments)."""
    repo = "/repos/vllm-project/recipes"
    fake.add("GET", f"{repo}/pulls/682", "recipes-pull-682.json")
    fake.add("GET", f"{repo}/pulls/682/commits", "recipes-pull-682-commits.json")
    fake.serve_comments("vllm-project/recipes", 682, recorded("recipes-issue-682-comments.json"))


_TOKENISH = re.compile(r"SENTINEL")


def assert_no_sentinel(*texts: str) -> None:
    for text in texts:
        assert SENTINEL_TOKEN not in text
        assert not _TOKENISH.search(text), text
