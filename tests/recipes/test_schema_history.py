"""The recipe schema accepts every revision of every recipe file the site accepted.

The site's builder reads a model file without validating it; the audit validates
strictly (unknown keys are refused with ``file:line``). So every key that any revision
of vllm-project/recipes carried must be known to the schema, or the audit of that
revision's PR exits 3 where the site renders it. This test reads every distinct blob of
``models/**.yaml``, ``taxonomy.yaml``, ``strategies/*.yaml`` and ``kv_store/*.yaml`` in
the history of a recipes clone (git objects only: nothing is checked out) and loads it
as the audit does: ``safe_yaml``, the YAML 1.2 checks and the schema. Without a clone
it is skipped.

The feature-mode rules (``check_recipe_spec``) are the site's own build-time checks,
and they changed over time; the two revisions they refuse are listed with what the site
did with them.

``PROVENANCE_RECIPES_GIT`` names the clone (bare or not, full history); the default is
the mirror beside the checkout, ``../.mirror/vllm-project+recipes/repo``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from provenance.errors import InputError
from provenance.recipes.load.loader import check_recipe_spec, validate_yaml
from provenance.recipes.load.schema import KvStore, RecipeFile, Strategy, Taxonomy
from provenance.recipes.load.yaml12 import check_yaml12_nodes
from provenance.safe_yaml import load_yaml_bytes

REPO = Path(__file__).resolve().parents[2]
CLONE = Path(
    os.environ.get(
        "PROVENANCE_RECIPES_GIT", REPO.parent / ".mirror" / "vllm-project+recipes" / "repo"
    )
)
#: The revision the embedded recipes root and the golden tests use.
HEAD = "8959cf64189c71d36e11c6a30335f923f261b1f7"
#: Model file revisions the feature-mode rules refuse: (commit, file) → what the site did.
FEATURE_MODE_REFUSALS = {
    # scripts/build-recipes-api.mjs at f63b326 pushes the same error ("has no mode
    # available for variant mxfp4"): the site's build refused this revision too.
    ("f63b326", "models/zai-org/GLM-5.2.yaml"): "no mode is available for variant 'mxfp4'",
    # #627 (a2b3386, 2026-07-12) predates the site's rule (its build script has it by
    # f63b326): the site rendered this revision; the audit refuses the ambiguity (exit 3).
    ("a2b3386", "models/zai-org/GLM-5.2.yaml"): "a feature cannot declare both args and modes",
    # #350 (49dd873) ends hardware_overrides.blackwell.extra_args with a dotted option and
    # no value; the audit of this revision always stopped (exit 3) when it normalised the
    # rendered argv, naming no file. Every argument list is now checked when the recipe
    # is loaded, so the same refusal names file:line (docs/security.md, "Faults and limits").
    **{
        ("49dd873", f"models/moonshotai/{name}.yaml"): (
            "argv: '--attention-config.use_trtllm_ragged_deepseek_prefill': "
            "--attention-config.use_trtllm_ragged_deepseek_prefill expects a value"
        )
        for name in ("Kimi-K2.5", "Kimi-K2.6")
    },
}


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CLONE), *args], capture_output=True, text=True, check=True
    ).stdout


def _blobs() -> dict[str, tuple[str, str]]:
    """Every distinct blob of a recipes file in the history: sha → (path, first commit)."""
    out = _git(
        "log", "--format=C %H", "--raw", "--no-abbrev", "--no-renames", HEAD, "--",
        "models", "taxonomy.yaml", "strategies", "kv_store",
    )  # fmt: skip
    found: dict[str, tuple[str, str]] = {}
    commit = ""
    for line in out.splitlines():
        if line.startswith("C "):
            commit = line[2:]
        elif line.startswith(":"):
            meta, path = line.split("\t", 1)
            sha, status = meta.split()[-2:]
            if not status.startswith("D") and path.endswith((".yaml", ".yml")):
                found.setdefault(sha, (path, commit))
    return found


def _contents(shas: list[str]) -> Iterator[tuple[str, bytes]]:
    batch = subprocess.run(
        ["git", "-C", str(CLONE), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha in shas).encode(),
        capture_output=True,
        check=True,
    ).stdout
    at = 0
    for sha in shas:
        header_end = batch.index(b"\n", at)
        size = int(batch[at:header_end].split()[2])
        yield sha, batch[header_end + 1 : header_end + 1 + size]
        at = header_end + 1 + size + 1


def _check(path: str, raw: bytes, feature_modes: dict[tuple[str, str], str], commit: str) -> None:
    loaded = load_yaml_bytes(raw, path, keep_node=True)
    check_yaml12_nodes(loaded.node, path)
    if path.startswith("models/"):
        spec = validate_yaml(RecipeFile, loaded)
        try:
            check_recipe_spec(spec, loaded)
        except InputError as exc:
            feature_modes[(commit[:7], path)] = exc.message
    elif path == "taxonomy.yaml":
        validate_yaml(Taxonomy, loaded)
    elif path.startswith("strategies/"):
        validate_yaml(Strategy, loaded)
    elif path.startswith("kv_store/"):
        validate_yaml(KvStore, loaded)


@pytest.mark.slow
@pytest.mark.skipif(not CLONE.exists(), reason=f"no vllm-project/recipes clone at {CLONE}")
def test_every_revision_of_every_recipe_file_loads() -> None:
    blobs = _blobs()
    models = [sha for sha, (path, _) in blobs.items() if path.startswith("models/")]
    # 8959cf6 has 173 model files and ~600 commits: far more blobs than files.
    assert len(models) > 173 * 3, len(models)
    refused = []
    feature_modes: dict[tuple[str, str], str] = {}
    for sha, raw in _contents(list(blobs)):
        path, commit = blobs[sha]
        try:
            _check(path, raw, feature_modes, commit)
        except InputError as exc:
            refused.append(f"{commit[:7]} {exc.diagnostic()}")
    assert not refused, "\n".join(refused)
    assert feature_modes == FEATURE_MODE_REFUSALS


def test_an_unknown_key_is_still_refused_with_file_and_line() -> None:
    text = (
        b"model:\n  model_id: a/b\nvariants:\n  fp8:\n    nightly_required: true\n    nightly: 1\n"
    )
    loaded = load_yaml_bytes(text, "models/a/b.yaml", keep_node=True)
    with pytest.raises(InputError) as info:
        validate_yaml(RecipeFile, loaded)
    assert info.value.diagnostic() == (
        "invalid input: models/a/b.yaml:6 (variants.fp8.nightly): unknown key"
    )
