"""Round 3's fault classes on the package as ``pip install`` leaves it (the red team
measured them on a non-editable install): an index left stale by a killed ingest stops
nothing; a full disk under ``--output`` is one line and exit 6."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from recipes_history import REPO_ROOT
from shipped_support import base_env, run

from provenance.errors import EXIT_OK, EXIT_WRITE
from provenance.store.evidence import EvidenceStore
from provenance.store.record_index import build_index, read_index, write_index

pytestmark = [pytest.mark.shipped, pytest.mark.slow]
NARROW = ["--variant", "nvfp4", "--hardware", "b200", "--format", "json"]


def test_an_index_left_stale_by_a_killed_ingest(installed_bin: Path, tmp_path: Path) -> None:
    ledger, evidence = tmp_path / "ledger", tmp_path / "evidence"
    shutil.copytree(REPO_ROOT / "ledger", ledger)
    shutil.copytree(REPO_ROOT / "evidence", evidence)
    store = EvidenceStore(evidence)
    index = read_index(store)
    assert index is not None
    # the index as it was before the ingest that stored the last record was killed
    key, ids = next((k, v) for k, v in index.checkpoints.items() if "minimax-m3" in k)
    kept = [store.get(i) for k, v in index.checkpoints.items() for i in v if i != ids[-1]]
    write_index(store, build_index(kept))
    dirs = ["--ledger", str(ledger), "--evidence", str(evidence)]
    env = base_env(installed_bin)
    audit = run(["provenance", "audit", *dirs, *NARROW], cwd=tmp_path, env=env)
    assert audit.returncode == EXIT_OK, audit.stderr
    warnings = [line for line in audit.stderr.splitlines() if "index is stale" in line]
    assert len(warnings) == 1 and "rebuilt in memory" in warnings[0], audit.stderr
    assert json.loads(audit.stdout)["summary"]["combinations"] > 0
    verify = run(["provenance", "verify", *dirs], cwd=tmp_path, env=env)
    assert verify.returncode == EXIT_OK, verify.stdout + verify.stderr
    assert "rewrote it" in verify.stdout
    rebuilt = read_index(store)
    assert rebuilt is not None and ids[-1] in rebuilt.checkpoints[key]


def test_an_output_on_a_full_disk(installed_bin: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)],
        capture_output=True,
        check=False,
    )
    if os.geteuid() != 0 or mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        target = full / "report.json"
        args = ["provenance", "audit", *NARROW, "--output", str(target)]
        done = run(args, cwd=tmp_path, env=base_env(installed_bin))
        assert done.returncode == EXIT_WRITE, done.stderr
        assert done.stderr.splitlines() == [f"cannot write: {target}: No space left on device"]
        assert sorted(p.name for p in full.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)
