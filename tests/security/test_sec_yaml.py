"""Hostile YAML: one clear error naming file and line, exit code 3, nothing written.

Every document in ``HOSTILE_YAML`` goes through ``provenance.safe_yaml`` and
through each real loader (recipes, srt-slurm recipes, master configs, runner
maps, ledger entries, declarations); a representative subset goes through the
real CLI commands, which must exit 3 and leave the ledger and evidence store
byte-identical.
"""

from __future__ import annotations

import os
import shutil
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner
from inferencex_fixtures import RepoBuilder
from sec_fixtures import (
    HOSTILE_YAML,
    MASTER,
    RECIPE,
    REPO_ROOT,
    RUNNERS_PATH,
    HostileYaml,
    base_files,
    commit_raw,
    reduced_recipes_root,
    tree_state,
)

from provenance import safe_yaml
from provenance.cli.main import cli
from provenance.errors import EXIT_INPUT, EXIT_INTEGRITY, InputError, UnsafeInputError
from provenance.evidence.inferencex.srt_slurm import NotVllmRecipeError, load_recipe_bytes
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.safe_yaml import MAX_YAML_BYTES, load_yaml, load_yaml_bytes
from provenance.store.ledger import Ledger

CASES = {case.name: case for case in HOSTILE_YAML}
MODEL_FILE = "models/MiniMaxAI/MiniMax-M3.yaml"
LEDGER_FILE = "prs/SemiAnalysisAI__InferenceX__7.yaml"


def _assert_one_clear_error(error: InputError, case: HostileYaml, path: str) -> None:
    assert error.exit_code == EXIT_INPUT
    assert error.location is not None and error.location.path == path
    if case.has_line:
        assert error.location.line is not None and error.location.line >= 1
    text = error.diagnostic()
    assert case.message in text
    assert text.startswith("invalid input: " + path) or text.startswith("unsafe input: " + path)
    assert "Traceback" not in text and "\n" not in text.strip()


@pytest.mark.parametrize("case", HOSTILE_YAML, ids=lambda c: c.name)
def test_safe_yaml_refuses_with_file_and_line(case: HostileYaml, tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_yaml_bytes(case.raw, "hostile.yaml")
    _assert_one_clear_error(info.value, case, "hostile.yaml")
    on_disk = tmp_path / f"{case.name}.yaml"
    on_disk.write_bytes(case.raw)
    with pytest.raises(InputError) as info:
        load_yaml(on_disk)
    _assert_one_clear_error(info.value, case, str(on_disk))


def test_alias_bomb_memory_is_bounded() -> None:
    """The billion-laughs document would be ~10^9 nodes; refusing it stays in kilobytes."""
    for name in ("alias-bomb", "alias-count", "recursive-alias"):
        tracemalloc.start()
        with pytest.raises(InputError):
            load_yaml_bytes(CASES[name].raw, f"{name}.yaml")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"\n{name}: peak traced memory {peak / 1024:.0f} KiB")  # figure for docs
        assert peak < 64 * 1024 * 1024


def test_utf8_bom_is_accepted_and_size_limit_is_exact(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert load_yaml_bytes(b"\xef\xbb\xbfa: 1\n", "bom.yaml").data == {"a": 1}
    # the real limit is checked before decoding or parsing anything
    with pytest.raises(InputError, match=f"over the {MAX_YAML_BYTES}-byte limit"):
        load_yaml_bytes(b"#" * (MAX_YAML_BYTES + 1), "big.yaml")
    # the boundary itself, on a small limit (parsing 8 MiB would only make the suite slow)
    monkeypatch.setattr(safe_yaml, "MAX_YAML_BYTES", 64)
    at_limit = b"a: 1\n" + b"#" * 58 + b"\n"
    assert len(at_limit) == 64
    assert load_yaml_bytes(at_limit, "limit.yaml").data == {"a": 1}
    (tmp_path / "limit.yaml").write_bytes(at_limit + b"\n")
    with pytest.raises(InputError, match="65 bytes, over the 64-byte limit"):
        load_yaml(tmp_path / "limit.yaml")
    with pytest.raises(InputError, match="larger than 64 bytes"):
        safe_yaml.load_yaml_text((at_limit + b"\n").decode(), "limit.yaml")


# --- each real loader ---------------------------------------------------------


@pytest.fixture(scope="module")
def recipes_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recipes") / "recipes"
    shutil.copytree(REPO_ROOT / "recipes", root)
    return root


@pytest.mark.parametrize("case", HOSTILE_YAML, ids=lambda c: c.name)
def test_recipe_loader(case: HostileYaml, recipes_copy: Path) -> None:
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    model.write_bytes(case.raw)
    try:
        with pytest.raises(InputError) as info:
            load_recipe(load_recipes_root(recipes_copy), "MiniMaxAI/MiniMax-M3")
    finally:
        model.write_bytes(good)
    assert info.value.location is not None
    assert info.value.location.path.endswith(MODEL_FILE)
    # a model recipe has its own, smaller size limit (docs/security.md, §9), checked first
    message = "over the limit of 524288" if case.name == "oversized" else case.message
    assert message in info.value.diagnostic()


#: srt-slurm recipes are read as srtctl reads them (``yaml.safe_load``: the last of
#: repeated keys wins, the record marked partial), so a duplicate key is no error there.
SRT_SLURM_HOSTILE = [c for c in HOSTILE_YAML if c.name != "duplicate-key"]


@pytest.mark.parametrize("case", SRT_SLURM_HOSTILE, ids=lambda c: c.name)
def test_srt_slurm_loader(case: HostileYaml) -> None:
    with pytest.raises(InputError) as info:
        load_recipe_bytes(case.raw, RECIPE)
    _assert_one_clear_error(info.value, case, RECIPE)


def test_srt_slurm_loader_reads_a_duplicate_key_as_srtctl_does() -> None:
    """The hostile duplicate-key file is read (the last value wins), so what decides is
    its content: it names no vLLM backend, which is its own, specific refusal."""
    (case,) = [c for c in HOSTILE_YAML if c.name == "duplicate-key"]
    with pytest.raises(NotVllmRecipeError):
        load_recipe_bytes(case.raw, RECIPE)


@pytest.mark.parametrize("case", HOSTILE_YAML, ids=lambda c: c.name)
def test_ledger_entry_and_declarations_loaders(case: HostileYaml, tmp_path: Path) -> None:
    ledger_root = tmp_path / "ledger"
    (ledger_root / "prs").mkdir(parents=True)
    (ledger_root / LEDGER_FILE).write_bytes(case.raw)
    with pytest.raises(InputError) as info:
        Ledger(ledger_root).entries()
    assert info.value.location is not None
    assert info.value.location.path.endswith(LEDGER_FILE)
    assert case.message in info.value.diagnostic()
    (ledger_root / LEDGER_FILE).unlink()
    (ledger_root / "declarations.yaml").write_bytes(case.raw)
    with pytest.raises(InputError) as info:
        Ledger(ledger_root).declarations()
    assert info.value.location is not None
    assert info.value.location.path.endswith("declarations.yaml")
    assert case.message in info.value.diagnostic()


WRONG_TYPES = {
    "recipe": (MODEL_FILE, b"model: 5\nvariants: [a]\n"),
    "srt-slurm": (RECIPE, b"name: x\nresources: {gpus_per_node: lots}\nbackend: {type: vllm}\n"),
    "ledger": (LEDGER_FILE, b"schema: provenance.ledger.pr/v1\npr: [1, 2]\ntitle: {a: b}\n"),
}


def test_wrong_types_name_file_line_and_key(recipes_copy: Path, tmp_path: Path) -> None:
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    model.write_bytes(WRONG_TYPES["recipe"][1])
    try:
        with pytest.raises(InputError) as info:
            load_recipe(load_recipes_root(recipes_copy), "MiniMaxAI/MiniMax-M3")
    finally:
        model.write_bytes(good)
    location = info.value.location
    assert location is not None and location.path.endswith(MODEL_FILE) and location.line
    with pytest.raises(InputError) as info:
        load_recipe_bytes(WRONG_TYPES["srt-slurm"][1], RECIPE)
    location = info.value.location
    assert location is not None and location.path == RECIPE and location.line
    ledger_root = tmp_path / "ledger"
    (ledger_root / "prs").mkdir(parents=True)
    (ledger_root / LEDGER_FILE).write_bytes(WRONG_TYPES["ledger"][1])
    with pytest.raises(InputError) as info:
        Ledger(ledger_root).entries()
    location = info.value.location
    assert location is not None and location.path.endswith(LEDGER_FILE) and location.line


# --- through the CLI: exit 3, nothing written -----------------------------------

CLI_CASES = ("alias-bomb", "duplicate-key", "python-object", "latin-1", "utf16-bom", "bad-date")


@pytest.fixture(scope="module")
def hostile_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[RepoBuilder, dict[str, str]]:
    """A toy InferenceX repo: a good first commit, then one commit per hostile file."""
    builder = RepoBuilder(tmp_path_factory.mktemp("hostile") / "inferencex")
    files = {path: str(text).encode() for path, text in base_files().items()}
    commit_raw(builder, "Add toy configs (#7)", files)
    revs: dict[str, str] = {}
    for name in CLI_CASES:
        for target in (MASTER, RECIPE, RUNNERS_PATH):
            revs[f"{target}:{name}"] = commit_raw(
                builder, f"hostile {name} (#8)", {**files, target: CASES[name].raw}
            )
    bad_entry = b"toy-bad:\n  image: x\n  model: org/Toy\n  runner: [1, 2]\n  scenarios: 7\n"
    revs["wrong-type-master:"] = commit_raw(
        builder, "wrong type (#9)", {**files, MASTER: files[MASTER] + bad_entry}
    )
    return builder, revs


def _ingest(repo: Path, out: Path, rev: str, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(repo),
            "--rev",
            rev,
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
            *extra,
        ],
    )
    return result.exit_code, result.output


def _check_refused(
    builder: RepoBuilder, revs: dict[str, str], out: Path, targets: tuple[str, ...]
) -> None:
    first = builder.repo.git.rev_list("--max-parents=0", "HEAD").strip()
    code, output = _ingest(builder.root, out, first)
    assert code == 0, output
    before = tree_state(out / "ledger", out / "evidence")
    for label, rev in revs.items():
        path = label.split(":")[0]
        if path not in targets:
            continue
        code, output = _ingest(builder.root, out, rev)
        assert code == EXIT_INPUT, (label, output)
        errors = [line for line in output.splitlines() if line.startswith("invalid input")]
        assert len(errors) == 1, (label, output)
        assert errors[0].startswith(f"invalid input: {path}:"), (label, output)
        assert "Traceback" not in output
        assert tree_state(out / "ledger", out / "evidence") == before, label


def test_ingest_of_hostile_master_or_runners_exits_3_and_writes_nothing(
    hostile_history: tuple[RepoBuilder, dict[str, str]], tmp_path: Path
) -> None:
    builder, revs = hostile_history
    _check_refused(builder, revs, tmp_path, (MASTER, RUNNERS_PATH))


def test_ingest_warns_with_file_and_line_for_a_malformed_config_key(
    hostile_history: tuple[RepoBuilder, dict[str, str]], tmp_path: Path
) -> None:
    """Documented ingest behaviour: a config key that fails validation is skipped with a
    warning naming file:line (upstream schema drift must not block the rest)."""
    builder, revs = hostile_history
    code, output = _ingest(builder.root, tmp_path, revs["wrong-type-master:"])
    assert code == 0, output
    warning = [line for line in output.splitlines() if "'toy-bad'" in line]
    assert len(warning) == 1 and f"{MASTER}:" in warning[0], output
    assert "records: 5 (5 new" in output  # the valid keys are still ingested


def test_a_hostile_srt_slurm_recipe_is_skipped_with_a_located_warning(
    hostile_history: tuple[RepoBuilder, dict[str, str]], tmp_path: Path
) -> None:
    """Documented ingest behaviour: an unreadable srt-slurm recipe costs its points only.

    Failing the whole ingest on one would block every ingest. The warning names
    file:line; no record is made for the points that use it. (A duplicate key is read
    as srtctl reads it: ``test_srt_slurm_loader_reads_a_duplicate_key_as_srtctl_does``.)
    """
    builder, revs = hostile_history
    first = builder.repo.git.rev_list("--max-parents=0", "HEAD").strip()
    assert _ingest(builder.root, tmp_path, first)[0] == 0
    before = tree_state(tmp_path / "ledger", tmp_path / "evidence")
    for name in (n for n in CLI_CASES if n != "duplicate-key"):
        code, output = _ingest(
            builder.root, tmp_path, revs[f"{RECIPE}:{name}"], "--keys", "*dynamo*"
        )
        assert code == 0, (name, output)
        assert "records: 0 (0 new" in output, (name, output)
        assert "srt-slurm recipe unreadable" in output, (name, output)
        warnings = [line for line in output.splitlines() if f"{RECIPE}:" in line]
        assert len(warnings) == 1 and CASES[name].message in warnings[0], (name, output)
        assert tree_state(tmp_path / "ledger", tmp_path / "evidence") == before, name


def test_audit_and_verify_of_hostile_yaml_exit_3_and_write_nothing(
    recipes_copy: Path, tmp_path: Path
) -> None:
    ledger_root, evidence_root = tmp_path / "ledger", tmp_path / "evidence"
    (ledger_root / "prs").mkdir(parents=True)
    evidence_root.mkdir()
    report = tmp_path / "report.md"
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    runner = CliRunner()
    audit = [
        "audit",
        "--recipes-root",
        str(recipes_copy),
        "--ledger",
        str(ledger_root),
        "--evidence",
        str(evidence_root),
        "--hardware",
        "h200",
        "--strategy",
        "single_node_tp",
        "--features",
        "none",
        "--format",
        "markdown",
        "--output",
        str(report),
    ]
    verify = ["verify", "--ledger", str(ledger_root), "--evidence", str(evidence_root)]
    for name in CLI_CASES:
        raw = CASES[name].raw
        before = tree_state(ledger_root, evidence_root, recipes_copy)
        model.write_bytes(raw)
        try:
            result = runner.invoke(cli, audit)
        finally:
            model.write_bytes(good)
        assert result.exit_code == EXIT_INPUT, (name, result.output)
        assert MODEL_FILE in result.output and "Traceback" not in result.output
        assert not report.exists()
        assert tree_state(ledger_root, evidence_root, recipes_copy) == before
        for target in (ledger_root / LEDGER_FILE, ledger_root / "declarations.yaml"):
            target.write_bytes(raw)
            before = tree_state(ledger_root, evidence_root)
            for args in (audit, verify):
                result = runner.invoke(cli, args)
                assert result.exit_code == EXIT_INPUT, (name, target.name, args[0], result.output)
                assert target.name in result.output, result.output
                assert not report.exists()
                assert tree_state(ledger_root, evidence_root) == before
            target.unlink()


def test_every_yaml_reading_command_exits_3(recipes_copy: Path, tmp_path: Path) -> None:
    """combos, explain, cite, graph and flags --yaml on a hostile file: exit 3, file named."""
    ledger_root, evidence_root = tmp_path / "ledger", tmp_path / "evidence"
    (ledger_root / "prs").mkdir(parents=True)
    evidence_root.mkdir()
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    hostile_srt = tmp_path / "srt.yaml"
    graph_out = tmp_path / "graph.json"
    root = ["--recipes-root", str(recipes_copy)]
    dirs = ["--ledger", str(ledger_root), "--evidence", str(evidence_root)]
    recipe = "MiniMaxAI/MiniMax-M3"
    commands = {
        "combos": (["combos", recipe, *root], MODEL_FILE),
        "explain": (
            ["explain", recipe, *root, *dirs, "--variant", "nvfp4", "--hardware", "b300"],
            MODEL_FILE,
        ),
        "cite": (["cite", recipe, *root, *dirs], MODEL_FILE),
        "graph": (
            ["graph", "--recipe", recipe, *root, *dirs, "--output", str(graph_out)],
            MODEL_FILE,
        ),
        "flags": (["flags", "--yaml", str(hostile_srt)], hostile_srt.name),
    }
    runner = CliRunner()
    for name in CLI_CASES:
        hostile_srt.write_bytes(CASES[name].raw)
        model.write_bytes(CASES[name].raw)
        try:
            for command, (args, shown) in commands.items():
                before = tree_state(ledger_root, evidence_root)
                result = runner.invoke(cli, args)
                assert result.exit_code == EXIT_INPUT, (name, command, result.output)
                assert shown in result.output and "Traceback" not in result.output
                assert tree_state(ledger_root, evidence_root) == before
                assert not graph_out.exists()
        finally:
            model.write_bytes(good)


def test_devices_and_fifos_are_refused_without_reading(tmp_path: Path) -> None:
    """A checkout can hold a symlink to /dev/zero (endless) or a FIFO (blocks on open)."""
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path in (zero, fifo):
        with pytest.raises(InputError, match="not a regular file"):
            load_yaml(path)
    ledger_root = tmp_path / "ledger"
    (ledger_root / "prs").mkdir(parents=True)
    (tmp_path / "evidence").mkdir()
    (ledger_root / "declarations.yaml").symlink_to("/dev/zero")
    result = CliRunner().invoke(
        cli, ["verify", "--ledger", str(ledger_root), "--evidence", str(tmp_path / "evidence")]
    )
    assert result.exit_code == EXIT_INPUT, result.output
    assert "not a regular file" in result.output


def test_recipe_symlinked_to_dev_zero_exits_3(recipes_copy: Path, tmp_path: Path) -> None:
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    model.unlink()
    model.symlink_to("/dev/zero")
    (tmp_path / "l").mkdir()
    (tmp_path / "e").mkdir()
    dirs = ["--ledger", str(tmp_path / "l"), "--evidence", str(tmp_path / "e")]
    try:
        result = CliRunner().invoke(
            cli, ["audit", "MiniMaxAI/MiniMax-M3", "--recipes-root", str(recipes_copy), *dirs]
        )
    finally:
        model.unlink()
        model.write_bytes(good)
    assert result.exit_code == EXIT_INPUT, result.output
    assert result.output.startswith("unsafe input: ")  # refused before it is opened


def test_recipe_symlinked_outside_the_root_is_refused(recipes_copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "runner-secrets.yaml"
    outside.write_text("model:\n  private_key_name: x\n")
    model = recipes_copy / MODEL_FILE
    good = model.read_bytes()
    model.unlink()
    model.symlink_to(outside)
    try:
        with pytest.raises(UnsafeInputError):
            load_recipe(load_recipes_root(recipes_copy), "MiniMaxAI/MiniMax-M3")
    finally:
        model.unlink()
        model.write_bytes(good)


def test_the_ci_audit_reads_recipes_from_git_and_refuses_hostile_heads(tmp_path: Path) -> None:
    """``audit --repo --base --head`` (what the GitHub Action runs on a recipes PR)."""
    recipes = reduced_recipes_root(tmp_path / "checkout")
    builder = RepoBuilder(recipes)
    builder.repo.git.add("-A")
    builder.repo.git.commit("-q", "-m", "base")
    base = str(builder.repo.head.commit.hexsha)
    heads: dict[str, tuple[str, str]] = {}
    for name, change in {
        "model-symlink": {MODEL_FILE: "->/etc/passwd"},
        "taxonomy-symlink": {"taxonomy.yaml": "->/etc/passwd"},
        "alias-bomb": {MODEL_FILE: CASES["alias-bomb"].raw.decode()},
        "duplicate-key": {MODEL_FILE: CASES["duplicate-key"].raw.decode()},
    }.items():
        builder.repo.git.checkout("-q", base)
        heads[name] = (builder.commit(name, dict(change)), next(iter(change)))
    builder.repo.git.checkout("-q", base)
    (tmp_path / "l").mkdir()
    (tmp_path / "e").mkdir()
    for name, (head, path) in heads.items():
        args = ["audit", "--repo", str(recipes), "--base", base, "--head", head]
        args += ["--ledger", str(tmp_path / "l"), "--evidence", str(tmp_path / "e")]
        result = CliRunner().invoke(cli, [*args, "--format", "markdown"])
        assert result.exit_code == EXIT_INPUT, (name, result.output)
        label = "unsafe input" if "symlink" in name else "invalid input"
        assert result.output.startswith(label) and path in result.output, (name, result.output)


@pytest.mark.parametrize(
    "content",
    [
        b"[" * 200_000 + b"]" * 200_000,
        b'{"a": ' + b"9" * 100_000 + b"}",
        b'{"a": 1, "a": 2}',
        b"\xff\xfe{}",
        b'{"schema": "provenance.evidence/v1", "id": "sha256:' + b"0" * 64 + b'"}',
    ],
    ids=["deep", "huge-int", "duplicate-key", "utf16", "forged-id"],
)
def test_hostile_evidence_files_are_integrity_failures(content: bytes, tmp_path: Path) -> None:
    """An evidence file in a ledger PR is untrusted too: verify and audit exit 4, no traceback."""
    (tmp_path / "ledger" / "prs").mkdir(parents=True)
    (tmp_path / "evidence" / "aa").mkdir(parents=True)
    (tmp_path / "evidence" / "aa" / ("b" * 62 + ".json")).write_bytes(content)
    dirs = ["--ledger", str(tmp_path / "ledger"), "--evidence", str(tmp_path / "evidence")]
    for args in (["verify", *dirs], ["graph", *dirs]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == EXIT_INTEGRITY, (args[0], result.output)
        assert "Traceback" not in result.output
