"""Property-based fuzzing: hostile input raises only documented errors, never hangs.

Targets: the YAML loader (and the srt-slurm, master-config and recipe parsers
on top of it), the flag normaliser (argv and srt-slurm mappings), and the
static bash evaluator. Inputs are random, built from each format's hostile
tokens, and mutations of real files — the project's own fixtures always, and
``../shared/corpus`` YAML plus the InferenceX mirror's launcher scripts when
present (``corpus`` mark). The only exceptions allowed are
``provenance.errors.ProvenanceError`` subclasses. Each input is bounded by the
parsers' own limits (size, depth, steps), not by a per-example deadline (the suite's
Hypothesis profile has none: the machine is shared).

``PROVENANCE_FUZZ_EXAMPLES`` sets the examples per target (the suite: 200);
``scripts/fuzz_security.py`` runs the long campaign and prints the figures.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import git
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inferencex_fixtures import (
    LAUNCH_B300,
    MASTER_DISAGG,
    MASTER_SINGLE,
    RECIPE_4P1D,
    SCRIPT_MTP,
)
from sec_fixtures import (
    CORPUS,
    HOSTILE_YAML,
    REPO_ROOT,
)

from provenance.errors import ProvenanceError
from provenance.evidence.bash import Limits, evaluate_launcher
from provenance.evidence.bash.evaluator import DEFAULT_LIMITS
from provenance.evidence.inferencex.master import parse_entry
from provenance.evidence.inferencex.srt_slurm import load_recipe_bytes
from provenance.normalise.canonical import normalise_argv, normalise_mapping
from provenance.recipes.load.loader import load_recipe, load_recipes_root
from provenance.safe_yaml import load_yaml_bytes

EXAMPLES = int(os.environ.get("PROVENANCE_FUZZ_EXAMPLES", "200"))
MIRROR = REPO_ROOT.parent / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
FUZZ = settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
    derandomize=os.environ.get("PROVENANCE_FUZZ_RANDOM") is None,
)
#: inputs run per target, and how they ended (printed at the end of the module)
RUNS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    if RUNS:
        print("\nfuzz inputs run: " + ", ".join(f"{k}={v}" for k, v in sorted(RUNS.items())))


def _documented(target: str, call: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``call``; a ProvenanceError is a clean refusal, anything else fails the test."""
    RUNS[target] += 1
    try:
        return call(*args, **kwargs)
    except ProvenanceError as exc:
        RUNS[f"{target}:refused"] += 1
        assert exc.diagnostic().strip()
        return None


# --- mutation ------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes], tokens: list[bytes]) -> bytes:
    """A seed with a few random edits: cut, duplicate, insert a token or bytes, flip, truncate."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        size = len(data)
        at = draw(st.integers(min_value=0, max_value=size))
        kind = draw(st.sampled_from(["cut", "dup", "token", "bytes", "flip", "truncate"]))
        if kind == "cut" and size:
            end = draw(st.integers(min_value=at, max_value=min(size, at + 64)))
            del data[at:end]
        elif kind == "dup" and size:
            end = draw(st.integers(min_value=at, max_value=min(size, at + 256)))
            data[at:at] = data[at:end] * draw(st.integers(min_value=1, max_value=8))
        elif kind == "token":
            data[at:at] = draw(st.sampled_from(tokens))
        elif kind == "bytes":
            data[at:at] = draw(st.binary(max_size=16))
        elif kind == "flip" and at < size:
            data[at] = draw(st.integers(min_value=0, max_value=255))
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


# --- YAML ----------------------------------------------------------------------

YAML_TOKENS = [
    t.encode()
    for t in (
        "&a ",
        "*a",
        "<<: *a\n",
        "!!python/object/apply:os.system ['id']",
        "!!binary AAAA",
        "!!set {a}",
        "!!timestamp 2026-13-45",
        "!custom ",
        "? [a, b]\n: c\n",
        "---\n",
        "...\n",
        "%YAML 1.1\n",
        "\t",
        "{",
        "}",
        "[",
        "]",
        '"\\e[31m"',
        "'",
        '"',
        "\n  - ",
        ": ",
        "#",
        "9" * 5000,
        "0x" + "f" * 64,
        "1e999999",
        ".nan",
        "~",
        "\ufeff",
        "\u2028",
    )
] + [b"\xff\xfe", b"\xef\xbb\xbf", b"\x00", b"\xc3\x28", b"\xed\xa0\x80"]


def _own_yaml_seeds() -> list[bytes]:
    seeds = [MASTER_SINGLE, MASTER_DISAGG, RECIPE_4P1D]
    seeds += [(REPO_ROOT / "recipes" / "models" / "MiniMaxAI" / "MiniMax-M3.yaml").read_text()]
    return [s.encode() for s in seeds] + [case.raw[:4096] for case in HOSTILE_YAML]


@cache
def _corpus_yaml_seeds() -> list[bytes]:
    if not CORPUS.is_dir():
        return []
    files = sorted(p for p in CORPUS.rglob("*.yaml") if p.stat().st_size <= 64 * 1024)
    return [p.read_bytes() for p in files]


def _check_yaml(raw: bytes) -> None:
    loaded = _documented("yaml", load_yaml_bytes, raw, "fuzz.yaml")
    if loaded is not None:
        assert loaded.path == "fuzz.yaml"
    _documented("srt-slurm", load_recipe_bytes, raw, "fuzz.yaml")
    if loaded is not None and isinstance(loaded.data, dict):
        for key, value in list(loaded.data.items())[:4]:
            if isinstance(value, dict):
                _documented("master-entry", parse_entry, str(key), loaded, "0" * 40)


@FUZZ
@given(st.binary(max_size=2048))
def test_yaml_random_bytes(raw: bytes) -> None:
    _check_yaml(raw)


@FUZZ
@given(mutated(_own_yaml_seeds(), YAML_TOKENS))
def test_yaml_mutated_fixtures(raw: bytes) -> None:
    _check_yaml(raw)


@cache
def _recipes_root() -> Any:
    return load_recipes_root(REPO_ROOT / "recipes")


@FUZZ
@given(mutated(_own_yaml_seeds()[3:4], YAML_TOKENS))
def test_recipe_loader_mutated_recipe(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Fuzzed.yaml"
        path.write_bytes(raw)
        _documented("recipe", load_recipe, _recipes_root(), path)


@pytest.mark.corpus
def test_yaml_mutated_corpus() -> None:
    seeds = _corpus_yaml_seeds()
    if not seeds:
        pytest.skip("../shared/corpus is absent")

    @FUZZ
    @given(mutated(seeds, YAML_TOKENS))
    def run(raw: bytes) -> None:
        _check_yaml(raw)

    run()


# --- flag normaliser --------------------------------------------------------------

FLAG_WORDS = [
    "--tensor-parallel-size",
    "--tensor_parallel_size",
    "-tp",
    "--attention-config",
    "--attention_config.backend",
    "--attention_config.indexer_kv_dtype",
    "--speculative-config",
    '{"method": "eagle3", "num_speculative_tokens": 3}',
    '{"a": {"b": [1, {"c": null}]}}',
    "{",
    "}",
    "--no-enable-prefix-caching",
    "--enable-expert-parallel",
    "--kv-cache-dtype=fp8",
    "--served-model-name",
    "--host",
    "--port",
    "--model",
    "-O3",
    "-O",
    "--",
    "-",
    "=",
    "--=x",
    "--x.",
    "--.x",
    '--x."a.b"',
    "--x..y",
    "\x00",
    "\x1b[31m",
    "$(id)",
    "`id`",
    "nan",
    "1e309",
    "-0",
    "true",
    "False",
    "",
]


def _argv_seeds() -> list[list[str]]:
    seeds: list[list[str]] = [
        ["vllm", "serve", "m", "--tensor-parallel-size", "8", "--block-size", "128"],
        ["--speculative-config", '{"method":"eagle3","num_speculative_tokens":3}'],
    ]

    def walk(node: object) -> Iterator[list[str]]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("args", "extra_args", "base_args") and isinstance(value, list):
                    yield [str(v) for v in value]
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    import yaml

    model = REPO_ROOT / "recipes" / "models" / "MiniMaxAI" / "MiniMax-M3.yaml"
    seeds += list(walk(yaml.safe_load(model.read_text())))
    return seeds


ENV_VALUES = st.one_of(
    st.text(max_size=20), st.integers(), st.booleans(), st.none(), st.floats(), st.lists(st.text())
)
ARGV = st.lists(st.one_of(st.sampled_from(FLAG_WORDS), st.text(max_size=24)), max_size=24)


@st.composite
def mutated_argv(draw: st.DrawFn) -> list[str]:
    argv = list(draw(st.sampled_from(_argv_seeds())))
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        at = draw(st.integers(min_value=0, max_value=len(argv)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "join"]))
        word = draw(st.one_of(st.sampled_from(FLAG_WORDS), st.text(max_size=12)))
        if kind == "insert":
            argv.insert(at, word)
        elif kind == "delete" and at < len(argv):
            del argv[at]
        elif kind == "replace" and at < len(argv):
            argv[at] = word
        elif kind == "join" and at + 1 < len(argv):
            argv[at : at + 2] = [f"{argv[at]}={argv[at + 1]}"]
    return argv


@FUZZ
@given(ARGV, st.dictionaries(st.text(max_size=12), ENV_VALUES, max_size=4))
def test_normalise_argv_random(argv: list[str], env: dict[str, object]) -> None:
    _documented("normalise-argv", normalise_argv, argv, env)


@FUZZ
@given(mutated_argv())
@pytest.mark.slow
def test_normalise_argv_mutated_recipe_args(argv: list[str]) -> None:
    _documented("normalise-argv", normalise_argv, ["vllm", "serve", "m", *argv])


JSON_LIKE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=16)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)


@FUZZ
@given(
    st.dictionaries(st.one_of(st.sampled_from(FLAG_WORDS), st.text(max_size=16)), JSON_LIKE),
    st.dictionaries(st.text(max_size=12), ENV_VALUES, max_size=4),
)
@pytest.mark.slow
def test_normalise_mapping_random(config: dict[str, object], env: dict[str, object]) -> None:
    _documented("normalise-mapping", normalise_mapping, config, env)


@cache
def _vllm_config_seeds() -> list[dict[str, object]]:
    import yaml

    texts = [RECIPE_4P1D]
    if CORPUS.is_dir():
        texts += [p.read_text() for p in sorted(CORPUS.rglob("srt-slurm-recipes/**/*.yaml"))]
    seeds: list[dict[str, object]] = []
    for text in texts:
        data = yaml.safe_load(text)
        roles = (
            (data.get("backend") or {}).get("vllm_config") or {} if isinstance(data, dict) else {}
        )
        seeds += [dict(config) for config in roles.values() if isinstance(config, dict)]
    return seeds


@st.composite
def mutated_mapping(draw: st.DrawFn) -> dict[str, object]:
    config = dict(draw(st.sampled_from(_vllm_config_seeds())))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        keys = sorted(config)
        kind = draw(st.sampled_from(["set", "delete", "rename", "add"]))
        if kind == "add" or not keys:
            config[draw(st.sampled_from(FLAG_WORDS)).lstrip("-")] = draw(JSON_LIKE)
            continue
        key = draw(st.sampled_from(keys))
        if kind == "set":
            config[key] = draw(st.one_of(JSON_LIKE, st.sampled_from(FLAG_WORDS)))
        elif kind == "delete":
            del config[key]
        else:
            config[draw(st.text(max_size=12))] = config.pop(key)
    return config


@FUZZ
@given(mutated_mapping())
def test_normalise_mapping_mutated_srt_slurm_configs(config: dict[str, object]) -> None:
    _documented("normalise-mapping", normalise_mapping, config)


# --- static bash evaluator -----------------------------------------------------------

BASH_TOKENS = [
    t.encode()
    for t in (
        "$(",
        ")",
        "`",
        "${",
        "}",
        "$((",
        "))",
        "((",
        "[[ ",
        " ]]",
        "[ ",
        " ]",
        "'",
        '"',
        "\\",
        "\n",
        ";",
        "|",
        "&",
        "&&",
        "||",
        "<<EOF\n",
        "\nEOF\n",
        "<<<",
        ">",
        "2>&1",
        "eval ",
        "source ",
        ". ",
        "exec ",
        "for i in $(seq 1 1000000); do x=$x$x; done\n",
        "while true; do :; done\n",
        "until false; do :; done\n",
        "f() { f; }; f\n",
        "x=a; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do x=$x$x; done\n",
        "if [ ",
        "then ",
        "fi\n",
        "case $x in a) ;; esac\n",
        "declare -A M=( [a]=1 ",
        "${x//a/b}",
        "${x:-$(id)}",
        "${#x}",
        "${x:1:2}",
        "${!x}",
        "$((2**63))",
        "$((1/0))",
        "$((x%0))",
        "${x:?boom}",
        "set -- a b; shift 99\n",
        "IFS=:\n",
        "vllm serve $MODEL --tensor-parallel-size $TP ",
        "--speculative-config '{\"num_speculative_tokens\": $N}' ",
        "export X=$(id)\n",
        "\x00",
        "\x1b",
    )
]
ENV = {"MODEL": "org/Toy", "TP": "4", "PORT": "8888", "CONC": "4", "ISL": "8192", "OSL": "1024"}
#: the suite uses smaller budgets to stay fast; the campaign (PROVENANCE_FUZZ_RANDOM) uses
#: the production limits the ingest runs with
FUZZ_LIMITS = (
    DEFAULT_LIMITS
    if os.environ.get("PROVENANCE_FUZZ_RANDOM")
    else Limits(max_steps=200_000, max_value_chars=200_000, max_loop_iterations=5_000)
)


def _own_bash_seeds() -> list[bytes]:
    return [SCRIPT_MTP.encode(), LAUNCH_B300.encode(), b"vllm serve m --tp 2\n"]


@cache
def _mirror_scripts() -> list[bytes]:
    if not MIRROR.is_dir():
        return []
    from provenance.sources.git import open_repo, read_blob, resolve_commit

    commit = resolve_commit(open_repo(MIRROR), "HEAD")
    paths = sorted(
        path
        for item in commit.tree.traverse()
        if isinstance(item, git.Blob)
        and (path := str(item.path)).startswith("benchmarks/single_node/")
        and path.endswith(".sh")
    )
    scripts = []
    for path in paths[:: max(1, len(paths) // 48)]:
        found = read_blob(commit, path)
        if found is not None:
            scripts.append(found[0])
    return scripts


def _check_bash(raw: bytes) -> None:
    text = raw.decode("utf-8", "replace")
    result = _documented("bash", evaluate_launcher, text, "fuzz.sh", ENV, limits=FUZZ_LIMITS)
    if result is not None and result.argv is not None:
        assert all(isinstance(a, str) for a in result.argv)


@FUZZ
@given(st.lists(st.sampled_from(BASH_TOKENS), max_size=40).map(b"".join))
def test_bash_random_token_soup(raw: bytes) -> None:
    _check_bash(raw)


@FUZZ
@given(mutated(_own_bash_seeds(), BASH_TOKENS))
def test_bash_mutated_fixtures(raw: bytes) -> None:
    _check_bash(raw)


@pytest.mark.corpus
def test_bash_mutated_inferencex_scripts() -> None:
    seeds = _mirror_scripts()
    if not seeds:
        pytest.skip("the InferenceX mirror (../.mirror) is absent")

    @FUZZ
    @given(mutated(seeds, BASH_TOKENS))
    def run(raw: bytes) -> None:
        _check_bash(raw)

    run()
