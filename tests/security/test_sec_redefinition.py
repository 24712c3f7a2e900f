"""A launcher that changes what ``vllm`` resolves to never yields a complete record.

Issue #20, class 1: a shell function or alias named ``vllm``, a directory put
ahead of ``PATH``, ``hash -p``, ``enable``, a function wrapping ``command`` /
``exec`` / ``builtin``, ``BASH_ENV`` or ``ENV`` make the flags the evaluator
reads differ from what runs. Each must make the record partial, naming the
construct's line.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from inferencex_fixtures import SCRIPT_MTP
from sec_fixtures import SCRIPT, toy_repo

from provenance.cli.main import cli
from provenance.errors import EXIT_OK
from provenance.evidence.bash import LauncherResult, evaluate_launcher
from provenance.evidence.bash.resolution import CONSTRUCT
from provenance.store.evidence import EvidenceStore

PATH = "benchmarks/single_node/fixed_seq_len/model_fp4_b300.sh"
SERVE = 'vllm serve "$MODEL" --port 8000\n'

# (name, lines before the serve command; the construct is on the last of them)
REDEFINING: list[tuple[str, str]] = [
    ("function", 'vllm() { command vllm "$@" --enforce-eager; }\n'),
    ("function-keyword", 'function vllm { command vllm "$@" --enforce-eager; }\n'),
    ("wrap-command", 'command() { builtin command "$@" --enforce-eager; }\n'),
    ("wrap-exec", 'exec() { "$@" --enforce-eager; }\n'),
    ("wrap-env", 'env() { "$@" --enforce-eager; }\n'),
    ("expand-aliases", "shopt -s expand_aliases\n"),
    ("alias", "alias vllm='vllm --enforce-eager'\n"),
    ("alias-quoted", "alias 'vllm=vllm --enforce-eager'\n"),
    ("path-prepend", 'PATH="$PWD/tools:$PATH"\n'),
    ("path-export", "export PATH=tools:$PATH\n"),
    ("path-declare", 'declare -x PATH="./bin:${PATH}"\n'),
    ("path-replaced", "PATH=./bin\n"),
    ("hash-p", "hash -p ./tools/vllm vllm\n"),
    ("enable-f", "enable -f ./evil.so vllm\n"),
    ("enable-n", "enable -n command\n"),
    ("bash-env", "export BASH_ENV=./tools/env.sh\n"),
    ("env", "ENV=./tools/env.sh\n"),
]


def evaluate(script: str) -> LauncherResult:
    return evaluate_launcher(script, PATH, {"MODEL": "org/M"})


def redefinition_lines(result: LauncherResult) -> list[int | None]:
    return [m.line for m in result.partial if m.construct_name == CONSTRUCT]


@pytest.mark.parametrize(("name", "construct"), REDEFINING, ids=[n for n, _ in REDEFINING])
def test_a_redefining_construct_makes_the_record_partial_at_its_line(
    name: str, construct: str
) -> None:
    script = "#!/usr/bin/env bash\necho start\n" + construct + SERVE
    result = evaluate(script)
    assert result.served
    assert redefinition_lines(result) == [3], (name, result.partial)


@pytest.mark.parametrize(
    "prefix",
    [
        "PATH=./bin:$PATH vllm serve m\n",
        "env PATH=./bin:$PATH vllm serve m\n",
        "./tools/vllm serve m\n",
        "command tools/vllm serve m\n",
        "BASH_ENV=./x.sh vllm serve m\n",
    ],
)
def test_a_redefinition_on_the_serve_command_itself_is_partial(prefix: str) -> None:
    result = evaluate("#!/usr/bin/env bash\n" + prefix)
    assert result.served
    assert redefinition_lines(result) == [2], result.partial


def test_a_redefinition_in_a_sourced_helper_is_partial_naming_the_helper() -> None:
    helper = 'vllm() { command vllm "$@" --enforce-eager; }\n'
    result = evaluate_launcher(
        "source ./lib.sh\nvllm serve m\n", PATH, {}, helpers={"lib.sh": helper}
    )
    found = [m for m in result.partial if m.construct_name == CONSTRUCT]
    assert [(m.path, m.line) for m in found] == [("./lib.sh", 1)]


@pytest.mark.parametrize(
    "harmless",
    [
        "export PATH=$PATH:/opt/tools/bin\n",
        'PATH="${PATH}:/opt/x"\n',
        "PATH+=:/opt/x\n",
        "shopt -s nullglob\n",
        "alias ll='ls -l'\n",
        "hash -r\n",
        "wait_for_server() { sleep 1; }\n",
        "MODEL_PATH=./m\n",
        "command vllm --version\n",
    ],
)
def test_constructs_that_leave_vllm_alone_add_no_marker(harmless: str) -> None:
    result = evaluate("#!/usr/bin/env bash\n" + harmless + SERVE)
    assert redefinition_lines(result) == []


def test_the_serve_flags_of_a_wrapped_vllm_are_not_claimed_complete() -> None:
    """The issue's example: the function adds --enforce-eager; the record is not complete."""
    result = evaluate('vllm() { command vllm "$@" --enforce-eager; }\n' + SERVE)
    assert result.partial, "a complete record would forge the served flags"
    assert result.partial[0].detail.startswith("function vllm()")


# --- a hand-made repository, ingested through the CLI ------------------------------


@pytest.mark.parametrize(("name", "construct"), REDEFINING[:1] + REDEFINING[6:9])
def test_ingest_records_the_redefinition_in_the_evidence(
    name: str, construct: str, tmp_path: Path
) -> None:
    builder = toy_repo(tmp_path / "inferencex")
    lines = SCRIPT_MTP.splitlines(keepends=True)
    builder.commit("Wrap vllm (#8)", {SCRIPT: "".join([lines[0], construct, *lines[1:]])})
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            "inferencex",
            str(builder.root),
            "--ledger",
            str(out / "ledger"),
            "--evidence",
            str(out / "evidence"),
        ],
    )
    assert result.exit_code == EXIT_OK, result.output
    served = [r for r in EvidenceStore(out / "evidence").iter_records() if "serve" in r.roles]
    assert served
    for record in served:
        found = [m for m in record.partial if m.construct_name == CONSTRUCT]
        assert [(m.path, m.line) for m in found] == [(SCRIPT, 2)], name


# --- copies of the real launchers --------------------------------------------------

MIRROR = (
    Path(__file__).resolve().parents[2] / ".." / ".mirror" / "SemiAnalysisAI+InferenceX" / "repo"
)
REVISION = "7a428f813f26fb3db96c4746f8ab72bd6a7b3a16"


def _real_vllm_launchers() -> list[tuple[str, str]]:
    if not MIRROR.is_dir():
        pytest.skip("InferenceX mirror not present")
    git = pytest.importorskip("git")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        repo = git.Repo(str(MIRROR), odbt=git.GitDB)
    folder = repo.commit(REVISION).tree / "benchmarks/single_node/fixed_seq_len"
    scripts = [
        (blob.path, blob.data_stream.read().decode())
        for blob in folder.blobs
        if blob.name.endswith(".sh")
    ]
    return [(p, s) for p, s in scripts if "vllm serve" in s]


@pytest.mark.corpus
def test_real_launchers_have_no_redefinition_and_gain_one_when_wrapped() -> None:
    launchers = _real_vllm_launchers()
    assert len(launchers) > 20
    env = {"MODEL": "org/M", "TP": "8", "CONC": "4", "ISL": "1024", "OSL": "1024"}
    env |= {"MAX_MODEL_LEN": "2048", "PORT": "8000", "EP_SIZE": "1", "DP_ATTENTION": "false"}
    wrapped_partial = 0
    for path, text in launchers:
        original = evaluate_launcher(text, path, env)
        assert redefinition_lines(original) == [], path
        head, _, rest = text.partition("\n")
        for _, construct in REDEFINING:
            result = evaluate_launcher(f"{head}\n{construct}{rest}", path, env)
            if result.served:
                assert redefinition_lines(result) == [2], (path, construct)
                wrapped_partial += 1
    print(f"\nreal launchers: {len(launchers)}, wrapped copies made partial: {wrapped_partial}")
    assert wrapped_partial >= len(launchers)
