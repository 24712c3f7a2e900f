"""Fixtures of tests/github: a recorded GitHub API on 127.0.0.1 (see github_fake.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from github_fake import FakeGitHub


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
