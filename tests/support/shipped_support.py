"""Shared by the as-shipped tests: a copy of the project as a user gets it, a fresh venv,
a non-editable install into it, and commands run with that venv first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from recipes_history import MODEL, REPO_ROOT

#: environment variables a test run must not hand to the tool (a real token, the
#: developer's venv)
_DROPPED = ("GITHUB_TOKEN", "GH_TOKEN", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")


def copy_checkout(dest: Path) -> Path:
    """The project's files as a clone of it has them (tracked files and new files that
    are not ignored: the working state under test), without build or cache leftovers."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = raw.decode()
        source = REPO_ROOT / rel
        if not source.is_file():  # deleted in the work tree, not yet committed
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return dest


def base_env(extra_path: Path | None = None) -> dict[str, str]:
    """The process environment for a shipped command: no token, no developer venv, the
    given bin directory first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    if extra_path is not None:
        env["PATH"] = f"{extra_path}{os.pathsep}{env.get('PATH', '')}"
    return env


def make_venv(path: Path) -> Path:
    """A fresh virtual environment (nothing but pip); its bin directory."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def run(
    args: list[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
    )


def recipes_repo(dest: Path, versions: list[tuple[str, str]]) -> tuple[Path, list[str]]:
    """A recipes git repository: the embedded recipes root, then one commit per
    ``(message, MiniMax-M3 text)``; its path and the commit ids (fixed dates and
    author: the same ids on every run)."""
    shutil.copytree(REPO_ROOT / "recipes", dest)
    env = {
        **base_env(),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=dest, env=env, check=True)
    shas = []
    for day, (message, text) in enumerate(versions, start=1):
        (dest / MODEL).write_text(text)
        date = f"{1_784_592_000 + day * 86_400} +0000"
        dated = {**env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        subprocess.run([*git, "add", "-A"], cwd=dest, env=dated, check=True)
        subprocess.run([*git, "commit", "-q", "-m", message], cwd=dest, env=dated, check=True)
        shas.append(
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    return dest, shas


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` as a test's fixed author at a fixed date (the same commit ids
    on every run); its stdout, stripped."""
    env = {
        **base_env(),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_AUTHOR_DATE": "1785000000 +0000",
        "GIT_COMMITTER_DATE": "1785000000 +0000",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()
