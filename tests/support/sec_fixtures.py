"""Hostile inputs and small InferenceX-shaped git repositories for the security tests.

Everything here is built by the tests themselves (gitpython, no network). The
toy repository is the InferenceX extractor tests' one (``inferencex_fixtures``):
a master config, ``configs/runners.yaml``, a runner launcher, one single-node
benchmark script and one srt-slurm recipe.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from inferencex_fixtures import (
    LAUNCH_B300,
    MASTER_DISAGG,
    MASTER_SINGLE,
    RECIPE_4P1D,
    RUNNERS,
    SCRIPT_MTP,
    WORKFLOW_PATH,
    RepoBuilder,
    workflow,
)

from provenance.safe_yaml import MAX_YAML_BYTES

REPO_ROOT = Path(__file__).resolve().parents[2]

CORPUS = REPO_ROOT.parent / "shared" / "corpus"
SENTINEL_TOKEN = "ghp_SENTINEL0123456789abcdefABCDEF0123456789"

SCRIPT = "benchmarks/single_node/fixed_seq_len/toy_fp4_b300_mtp.sh"
RECIPE = "benchmarks/multi_node/srt-slurm-recipes/vllm/toy/4p1d.yaml"
MASTER = "configs/nvidia-master.yaml"
RUNNERS_PATH = "configs/runners.yaml"
LAUNCHER = "runners/launch_b300-nv.sh"


def base_files() -> dict[str, str | None]:
    """The InferenceX extractor tests' toy repository: 1 single-node key, 1 disaggregated key."""
    return {
        MASTER: MASTER_SINGLE + "\n" + MASTER_DISAGG,
        RUNNERS_PATH: RUNNERS,
        WORKFLOW_PATH: workflow(),
        LAUNCHER: LAUNCH_B300,
        SCRIPT: SCRIPT_MTP,
        RECIPE: RECIPE_4P1D,
    }


#: A MiniMax-M3 NVFP4 B300 key whose script a test writes (:func:`m3_repo`): its records
#: are in scope of the embedded MiniMax-M3 recipe, so their values reach the audit.
M3_SCRIPT = "benchmarks/single_node/fixed_seq_len/minimaxm3_fp4_b300.sh"
MASTER_M3 = """\
minimaxm3-fp4-b300-vllm:
  image: vllm/vllm-openai:minimax-m3
  model: nvidia/MiniMax-M3-NVFP4
  model-prefix: minimaxm3
  runner: b300
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 8, conc-list: [4] }
"""


def m3_script(kv_cache_dtype: str) -> str:
    """The key's benchmark script, serving with ``--kv-cache-dtype`` ``kv_cache_dtype``."""
    quoted = kv_cache_dtype.replace("'", "'\\''")
    return (
        "#!/usr/bin/env bash\n"
        'vllm serve "$MODEL" --tensor-parallel-size $TP --block-size 128 '
        f"--kv-cache-dtype '{quoted}' --trust-remote-code\n"
    )


def m3_repo(root: Path, subject: str, kv_cache_dtype: str) -> RepoBuilder:
    """An InferenceX repository of one commit (``subject``: its PR title) holding the
    MiniMax-M3 key, whose served flag value is ``kv_cache_dtype``."""
    builder = RepoBuilder(root)
    builder.commit(
        subject,
        {
            MASTER: MASTER_M3,
            RUNNERS_PATH: RUNNERS,
            WORKFLOW_PATH: workflow(),
            LAUNCHER: LAUNCH_B300,
            M3_SCRIPT: m3_script(kv_cache_dtype),
        },
    )
    return builder


def strings_of(value: object) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def commit_raw(builder: RepoBuilder, subject: str, files: dict[str, bytes]) -> str:
    """Commit files given as raw bytes (hostile encodings), on top of the current tree."""
    for path, content in files.items():
        target = builder.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        builder.repo.git.add(path)
    builder.repo.git.commit("-q", "--allow-empty", "-m", subject)
    return str(builder.repo.head.commit.hexsha)


def toy_repo(root: Path, subject: str = "Add toy configs (#7)") -> RepoBuilder:
    builder = RepoBuilder(root)
    builder.commit(subject, base_files())
    return builder


MODEL_FILE = "models/MiniMaxAI/MiniMax-M3.yaml"


def reduced_recipes_root(
    root: Path, *, extra_args: list[str] | None = None, twin_variant: str | None = None
) -> Path:
    """The embedded recipes root with MiniMax-M3 cut down to a few combinations.

    Only the nvfp4 variant (plus, optionally, a twin under another name), on b300,
    single_node_tp, no features: fast to audit and cite in every format.
    """
    shutil.copytree(REPO_ROOT / "recipes", root)
    path = root / MODEL_FILE
    data = yaml.safe_load(path.read_text())
    nvfp4 = data["variants"]["nvfp4"]
    nvfp4["extra_args"] += extra_args or []
    nvfp4["supported_hardware"] = ["b300"]
    data["variants"] = {"nvfp4": nvfp4}
    if twin_variant:
        data["variants"][twin_variant] = dict(nvfp4)
    data["compatible_strategies"] = ["single_node_tp"]
    data["opt_in_features"] = []
    data["features"] = {}
    data.pop("strategy_overrides", None)
    data["meta"]["hardware"] = {"b300": "verified"}
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return root


def tree_state(*roots: Path) -> dict[str, str]:
    """Every file and directory under ``roots`` with the sha256 of its bytes (dirs: ``dir``)."""
    state: dict[str, str] = {}
    for root in roots:
        if not root.exists():
            state[str(root)] = "absent"
            continue
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                state[str(path)] = "link:" + os.readlink(path)
            elif path.is_dir():
                state[str(path)] = "dir"
            else:
                state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@dataclass(frozen=True)
class HostileYaml:
    """One hostile YAML document and what its single error must say."""

    name: str
    raw: bytes
    message: str  # a substring of the one error
    has_line: bool = True


def _alias_bomb() -> bytes:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(9):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return ("\n".join(lines) + "\n").encode()


def _many_aliases() -> bytes:
    return ("a: &a 1\nb: [" + ", ".join(["*a"] * 300) + "]\n").encode()


def _deep_block() -> bytes:
    return ("".join("  " * i + f"k{i}:\n" for i in range(80)) + "  " * 80 + "x: 1\n").encode()


HOSTILE_YAML: tuple[HostileYaml, ...] = (
    HostileYaml("alias-bomb", _alias_bomb(), "alias bomb"),
    HostileYaml("alias-count", _many_aliases(), "aliases"),
    HostileYaml("recursive-alias", b"a: &a\n  b: *a\n", "recursive YAML alias"),
    HostileYaml("deep-flow", b"a: " + b"[" * 2000 + b"]" * 2000 + b"\n", "nesting deeper"),
    HostileYaml("deep-block", _deep_block(), "nesting deeper"),
    HostileYaml(
        "oversized", b"# padding\n" * (MAX_YAML_BYTES // 10 + 1), "-byte limit", has_line=False
    ),
    HostileYaml("duplicate-key", b"a: 1\nb: 2\na: 3\n", "duplicate key 'a'"),
    HostileYaml(
        "python-object",
        b"a: !!python/object/apply:os.system ['touch /tmp/pwned']\n",
        "YAML tag not allowed",
    ),
    HostileYaml("python-name", b"a: !!python/name:os.system\n", "YAML tag not allowed"),
    HostileYaml("custom-tag", b"a: !include /etc/passwd\n", "YAML tag not allowed"),
    HostileYaml("latin-1", b"a: 1\nb: caf\xe9\n", "not valid UTF-8"),
    HostileYaml("utf16-bom", "a: 1\n".encode("utf-16"), "UTF-16/32"),
    HostileYaml("utf32-bom", "a: 1\n".encode("utf-32"), "UTF-16/32"),
    HostileYaml("utf16-no-bom", "a: 1\n".encode("utf-16-le"), "not allowed in YAML"),
    HostileYaml("nul-byte", b"a: 1\nb: x\x00y\n", "not allowed in YAML"),
    HostileYaml("escape-char", b"a: \x1b[2J\n", "not allowed in YAML"),
    HostileYaml("bad-date", b"a: 1\nb: 2026-13-45\n", "invalid YAML value"),
    HostileYaml("huge-int", b"a: " + b"9" * 5000 + b"\n", "invalid YAML value"),
    HostileYaml("bad-float-tag", b"a: !!float nope\n", "invalid YAML value"),
    HostileYaml("empty-float-tag", b"a: !!float\n", "invalid YAML value"),
    HostileYaml("bad-bool-tag", b"a: !!bool maybe\n", "invalid YAML value"),
    HostileYaml("bad-timestamp-tag", b"a: !!timestamp soon\n", "invalid YAML value"),
    HostileYaml("tag-kind-mismatch", b"a: !!str [1, 2]\n", "invalid tagged value"),
    HostileYaml("merge-non-mapping", b"a: 1\n<<: 2\n", "invalid tagged value"),
    HostileYaml("two-documents", b"a: 1\n---\nb: 2\n", "invalid YAML"),
    HostileYaml("complex-key", b"? [a, b]\n: 1\n", "mapping keys must be scalars"),
    HostileYaml("unterminated", b"a: [1, 2\nb: 3\n", "invalid YAML"),
    HostileYaml("tab-indent", b"a:\n\t- 1\n", "invalid YAML"),
)


def run_provenance(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``provenance ARGS`` in a fresh interpreter (the real entry point, real exit code)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", "from provenance.cli.main import main; main()", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
