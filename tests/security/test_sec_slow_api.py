"""A GitHub API that trickles its answer cannot hold a command (issue #20, class 4).

The socket timeout bounds each read; a server sending one byte at a time
resets it forever. Each API call has a total deadline (pages and retries
included) and each client (one command) another; both are met against a
trickling server on 127.0.0.1, in the status line and headers or in the body.
The server gives up after a minute, so a client without a deadline would get
a complete answer and these tests would fail rather than hang.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from github_fake import SENTINEL_TOKEN, recorded

from provenance.errors import EXIT_NETWORK, NetworkError
from provenance.model.ledger import PrRef
from provenance.sources.github import GitHubClient, GitHubSettings

PR_2120 = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)
STEP = 0.25  # seconds between bytes
GIVE_UP = 60.0  # the server's own bound: then it sends the rest at once


class TricklingServer:
    """Answers every connection with a valid answer, one byte every STEP seconds
    from ``fast`` bytes on (``fast``: how many bytes go at once first)."""

    def __init__(self, fast: int) -> None:
        self.fast = fast
        self.connections = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def answer(self) -> bytes:
        body = json.dumps(recorded("inferencex-pull-2120.json")).encode()
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    def _serve(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        data = self.answer()
        started = time.monotonic()
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(data[: self.fast])
                for i in range(self.fast, len(data)):
                    if self._stop.is_set():
                        return
                    if time.monotonic() - started > GIVE_UP:
                        conn.sendall(data[i:])
                        return
                    conn.sendall(data[i : i + 1])
                    time.sleep(STEP)
            except OSError:
                return  # the client hung up: what a deadline does

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


@pytest.fixture(params=["headers", "body"])
def trickling(request: pytest.FixtureRequest) -> Iterator[TricklingServer]:
    server = TricklingServer(fast=0)
    if request.param == "body":
        server.fast = server.answer().index(b"\r\n\r\n") + 4 + 10
    yield server
    server.stop()


def _client(url: str, **settings: float) -> GitHubClient:
    return GitHubClient(
        SENTINEL_TOKEN,
        GitHubSettings(api_url=url, retries=2, backoff=0, timeout=1, **settings),
    )


def test_a_trickling_answer_hits_the_call_deadline(trickling: TricklingServer) -> None:
    with pytest.raises(NetworkError) as caught:
        _client(trickling.url, deadline=1.5).pull(PR_2120)
    assert caught.value.exit_code == EXIT_NETWORK
    assert "no complete answer within the 1.5s call deadline" in caught.value.message
    assert trickling.connections == 1, "a deadline is not retried"


def test_the_command_deadline_bounds_every_call_together(trickling: TricklingServer) -> None:
    client = _client(trickling.url, deadline=600, command_deadline=1.5)
    with pytest.raises(NetworkError) as caught:
        client.pull(PR_2120)
    assert "no complete answer before the 1.5s command deadline" in caught.value.message
    with pytest.raises(NetworkError) as again:
        client.pull(PR_2120)
    assert "the 1.5s deadline ran out" in again.value.message
    assert trickling.connections == 1, "no request once the command's deadline is spent"
    client.close()  # closing never fails on the deadline


def test_a_prompt_answer_is_unaffected_and_an_outer_timer_survives() -> None:
    import signal

    server = TricklingServer(fast=1 << 30)  # everything at once
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, _frame: fired.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        pull = _client(server.url, deadline=5).pull(PR_2120)
        assert pull.ref == PR_2120
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 30, "the outer timer is re-armed"
        assert signal.getsignal(signal.SIGALRM) is not previous
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        server.stop()
    assert fired == []
