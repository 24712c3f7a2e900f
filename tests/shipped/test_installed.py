"""The package as a plain ``pip install`` leaves it: the embedded ledger, evidence and
recipes root travel inside it, and the defaults find them from anywhere."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from recipes_history import MODEL, REPO_ROOT
from shipped_support import base_env, run

pytestmark = [pytest.mark.shipped, pytest.mark.slow]


def _site_packages(installed_bin: Path) -> Path:
    done = run(
        [str(installed_bin / "python"), "-c", "import provenance; print(provenance.__file__)"],
        cwd=installed_bin,
        env=base_env(installed_bin),
    )
    assert done.returncode == 0, done.stderr
    package = Path(done.stdout.strip()).parent
    assert "site-packages" in package.parts, "installed, not editable"
    return package


def _tracked(folder: str) -> set[str]:
    names = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", folder],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return {name for name in names if (REPO_ROOT / name).is_file()}


def test_the_wheel_carries_the_embedded_data_and_nothing_else(installed_bin: Path) -> None:
    data = _site_packages(installed_bin) / "data"
    for folder in ("ledger", "evidence", "recipes"):
        shipped = {
            f"{folder}/{p.relative_to(data / folder).as_posix()}"
            for p in (data / folder).rglob("*")
            if p.is_file()
        }
        assert shipped == _tracked(folder), folder  # no .lock, no cache, nothing missing
    assert (data / "ledger" / "manifest.yaml").is_file()


def test_an_installed_audit_runs_anywhere_on_the_packaged_data(
    installed_bin: Path, tmp_path: Path
) -> None:
    done = run(
        ["provenance", "audit", "--format", "json", "--variant", "nvfp4", "--hardware", "b200"],
        cwd=tmp_path,
        env=base_env(installed_bin),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["recipes"] == ["MiniMaxAI/MiniMax-M3"]
    assert "site-packages" in report["ledger"]
    assert report["summary"]["combinations"] > 0


def test_in_a_recipes_checkout_the_checkout_is_the_root_and_options_override(
    installed_bin: Path, tmp_path: Path
) -> None:
    checkout = tmp_path / "recipes"
    shutil.copytree(REPO_ROOT / "recipes", checkout)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    args = ["provenance", "audit", "MiniMaxAI/MiniMax-M3", "--hardware", "b200", "--format", "json"]
    args += ["--variant", "nvfp4", "--features", "none"]
    # from a subdirectory: the git top level holds taxonomy.yaml
    done = run(args, cwd=checkout / "models", env=base_env(installed_bin))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (
        Path(report["recipe_files"]["MiniMaxAI/MiniMax-M3"]).resolve()
        == (checkout / MODEL).resolve()
    )
    # --ledger/--evidence override the packaged data
    (tmp_path / "ledger").mkdir()
    (tmp_path / "evidence").mkdir()
    args += ["--ledger", str(tmp_path / "ledger"), "--evidence", str(tmp_path / "evidence")]
    done = run(args, cwd=checkout, env=base_env(installed_bin))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ledger"] == str(tmp_path / "ledger")
    assert report["summary"]["recommended"] == 0
    assert any("no evidence records" in notice for notice in report["notices"])


def test_an_installed_audit_writes_into_a_fifo_in_place_and_whole(
    installed_bin: Path, tmp_path: Path
) -> None:
    """The console script's own ending (collector off, objects frozen, ordinary exit)
    with ``--output`` naming a FIFO: the reader gets the whole report, the FIFO stays."""
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    args = ["provenance", "audit", "--format", "json", "--variant", "nvfp4", "--hardware", "b200"]
    done = run([*args, "--output", str(fifo)], cwd=tmp_path, env=base_env(installed_bin))
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert not reader.is_alive()
    assert json.loads(received[0])["summary"]["combinations"] > 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.fifo"]
