"""AMD ``vllm-disagg`` multinode points: the prefill and decode ``vllm serve`` commands, statically.

The chain at InferenceX 843c6254f (every step read, never run):

1. ``runners/launch_<fleet>.sh`` exports ``MODEL_NAME=${MODEL##*/}`` and
   ``GPUS_PER_NODE`` and runs ``benchmarks/<BENCHMARK_SUBDIR>/<SCRIPT_NAME>``
   (evaluated with the bash evaluator for the matrix env of the point).
2. That launcher turns the master-config EP/DP-attention of each role into
   ``PREFILL_ENABLE_EP`` … booleans and calls ``bash ./submit.sh`` with
   positional arguments (evaluated; the argument words are taken from the
   launcher text).
3. ``amd_utils/submit.sh`` computes ``PREFILL_TP_SIZE = NODES * TP / WORKERS``
   per role and exports it with the booleans, ``xP``/``yD`` and ``ENGINE``
   (evaluated with those arguments as ``$1 …``).
4. ``amd_utils/job.slurm`` passes them into the serving container (``-e``)
   and runs ``server.sh``, which sources ``server_vllm.sh`` for ``vllm-disagg``
   (checked by text: the exact ``-e``/``source`` lines must be present).
5. ``server_vllm.sh`` looks the bare ``MODEL_NAME`` up in ``models_vllm.yaml``
   through ``eval "$(python3 -c …)"``; that Python is reimplemented here over
   the safe-loaded YAML (``prefill_flags``/``decode_flags`` defaulting to
   ``--tensor-parallel-size 8``; ``env`` then ``prefill_env``/``decode_env``
   exported word by word), then the ``sed`` rewrite of
   ``--tensor-parallel-size N`` (appended when absent) and the appends of
   ``--enable-expert-parallel`` / ``--enable-dp-attention`` unless present.
   The ``PREFILL_CMD``/``DECODE_CMD`` assignment is evaluated with the bash
   evaluator and its value evaluated again, as ``eval`` re-parses it.

Each step is checked against the script text: when a fragment the
reimplementation relies on is missing (another revision of the scripts), the
point is not understood and keeps the ``amd-disagg-python-eval`` skip, with a
warning naming the file and the fragment. Values only the cluster knows are
placeholders: the model path is ``/models/<checkpoint basename>`` (as for
single-node launchers) and the proxy address ``NODE0_ADDR`` (a harness flag).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from provenance.errors import InputError
from provenance.evidence.bash import evaluate_launcher, evaluate_script
from provenance.evidence.bash.evaluator import Evaluation
from provenance.evidence.bash.values import Text, Var, known
from provenance.evidence.inferencex.master import MasterEntry, MultiNodePoint
from provenance.evidence.inferencex.scripts import fleets_for_runner
from provenance.evidence.inferencex.snapshot import Snapshot
from provenance.model.flags import FlagSet
from provenance.model.record import PartialMarker, RoleTopology, Topology
from provenance.normalise.canonical import normalise_argv
from provenance.safe_yaml import load_yaml_bytes

AMD_UTILS = "benchmarks/multi_node/amd_utils/"
SUBMIT = AMD_UTILS + "submit.sh"
JOB_SLURM = AMD_UTILS + "job.slurm"
SERVER = AMD_UTILS + "server.sh"
SERVER_VLLM = AMD_UTILS + "server_vllm.sh"
MODELS_VLLM = AMD_UTILS + "models_vllm.yaml"
#: The proxy address (runtime); lands in ``--kv-transfer-config`` (a harness flag).
NODE0_ADDR = "NODE0_ADDR"
_DEFAULT_FLAGS = "--tensor-parallel-size 8"

#: Text every step relies on; a file without one of its fragments is not understood.
_REQUIRED: dict[str, tuple[str, ...]] = {
    JOB_SLURM: (
        'MODELS_YAML="$(pwd)/models_vllm.yaml"',
        'RUN_FILE="server.sh"',
        "-e MODEL_NAME=\\$MODEL_NAME",
        "-e ENGINE=\\$ENGINE",
        "-e xP=\\$xP",
        "-e yD=\\$yD",
        "-e PREFILL_TP_SIZE=\\$PREFILL_TP_SIZE",
        "-e DECODE_TP_SIZE=\\$DECODE_TP_SIZE",
        "-e PREFILL_ENABLE_EP=\\$PREFILL_ENABLE_EP",
        "-e PREFILL_ENABLE_DP=\\$PREFILL_ENABLE_DP",
        "-e DECODE_ENABLE_EP=\\$DECODE_ENABLE_EP",
        "-e DECODE_ENABLE_DP=\\$DECODE_ENABLE_DP",
    ),
    SERVER: ('if [[ "$ENGINE" == "vllm-disagg" ]]; then\n    source "$WS_PATH/server_vllm.sh"',),
    SERVER_VLLM: (
        'MODELS_YAML="${WS_PATH}/models_vllm.yaml"',
        "models = yaml.safe_load(f)",
        "model_name = '${MODEL_NAME}'",
        "m = models[model_name]",
        "pf = bash_escape(m.get('prefill_flags', '--tensor-parallel-size 8'))",
        "df = bash_escape(m.get('decode_flags', '--tensor-parallel-size 8'))",
        "ev = bash_escape(m.get('env', ''))",
        "dev = bash_escape(m.get('decode_env', ''))",
        "pev = bash_escape(m.get('prefill_env', ''))",
        "print(f'PREFILL_SERVER_CONFIG=\\\"{pf}\\\"')",
        "print(f'DECODE_SERVER_CONFIG=\\\"{df}\\\"')",
        "print(f'MODEL_ENVS=\\\"{ev}\\\"')",
        "print(f'DECODE_MODEL_ENVS=\\\"{dev}\\\"')",
        "print(f'PREFILL_MODEL_ENVS=\\\"{pev}\\\"')",
        '{ROLE}_SERVER_CONFIG=$(echo "${ROLE}_SERVER_CONFIG" | sed -E '
        '"s/--tensor-parallel-size[[:space:]]+[0-9]+/--tensor-parallel-size ${{ROLE}_TP_SIZE}/g")',
        '{ROLE}_SERVER_CONFIG+=" --tensor-parallel-size ${{ROLE}_TP_SIZE}"',
        'if [[ "${{ROLE}_ENABLE_EP:-false}" == "true" ]] && ! echo "${ROLE}_SERVER_CONFIG" '
        "| grep -q -- '--enable-expert-parallel'; then\n"
        '    {ROLE}_SERVER_CONFIG+=" --enable-expert-parallel"',
        'if [[ "${{ROLE}_ENABLE_DP:-false}" == "true" ]] && ! echo "${ROLE}_SERVER_CONFIG" '
        "| grep -q -- '--enable-dp-attention'; then\n"
        '    {ROLE}_SERVER_CONFIG+=" --enable-dp-attention"',
        "for env_pair in ${MODEL_ENVS}; do",
        "for env_pair in ${{ROLE}_MODEL_ENVS}; do",
        'if [ "$NODE_RANK" -eq 0 ]; then',
        'elif [ "$NODE_RANK" -gt 0 ] && [ "$NODE_RANK" -lt "$xP" ]; then',
        'SERVED_MODEL="${MODEL_NAME}"',
        'eval "${ROLE_CMD}"',
    ),
}
_ROLE_WORD = {"prefill": "PREFILL", "decode": "DECODE"}
_SUBMIT_CALL = re.compile(r"\$\(\s*bash\s+\./submit\.sh\s+((?:[^()]|\\\n)*?)\)", re.S)
_CMD = re.compile(r'^\s*(?P<name>PREFILL_CMD|DECODE_CMD)="vllm serve .*?[^\\]"\s*$', re.S | re.M)
_DEFAULT_ASSIGN = r'^{name}="\$\{{{name}:-(?P<value>[^}}]*)\}}"\s*$'
_SAFE_ENV_PAIR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=[^*?\[]*$")


class NotUnderstoodError(Exception):
    """The scripts at this commit are not in the form this reader reimplements."""


@dataclass(frozen=True)
class RoleServe:
    """One role's served flags and topology."""

    flags: FlagSet
    topology: RoleTopology


@dataclass(frozen=True)
class DisaggEvidence:
    """What an AMD vllm-disagg point serves, per role."""

    launcher: str
    runner_launcher: str
    roles: dict[str, RoleServe]
    topology: Topology
    partial: tuple[PartialMarker, ...]
    via_deprecated: bool

    def files(self) -> list[str]:
        return [self.launcher, SUBMIT, JOB_SLURM, SERVER, SERVER_VLLM, MODELS_VLLM]

    def attributed(self) -> list[str]:
        """The files whose content decides the served commands."""
        return [self.launcher, SUBMIT, SERVER_VLLM, MODELS_VLLM]


def is_amd_vllm_disagg(framework: str, snapshot: Snapshot) -> bool:
    return framework == "vllm-disagg" and snapshot.is_file(SERVER_VLLM)


def _text(snapshot: Snapshot, path: str) -> str:
    raw = snapshot.read(path)
    if raw is None:
        raise NotUnderstoodError(f"{path} not in the tree")
    return raw.decode("utf-8", "replace")


def _require(path: str, text: str) -> None:
    for fragment in _REQUIRED.get(path, ()):
        variants = (
            [fragment.replace("{ROLE}", word) for word in _ROLE_WORD.values()]
            if "{ROLE}" in fragment
            else [fragment]
        )
        if "ROLE_CMD" in fragment:
            variants = ['eval "$PREFILL_CMD"', 'eval "$DECODE_CMD"']
        for variant in variants:
            if variant not in text:
                raise NotUnderstoodError(f"{path}: no {variant!r}")


def _scalar(var: Var | None) -> str | None:
    """A scalar variable's value when wholly known."""
    if var is None or var.kind != "scalar" or not isinstance(var.value, tuple):
        return None
    return known(cast(Text, var.value))


def _value(evaluation: Evaluation, name: str, path: str) -> str:
    value = _scalar(evaluation.final.vars.get(name))
    if value is None:
        raise NotUnderstoodError(f"{path}: {name} is not known statically")
    return value


def _exported(evaluation: Evaluation) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, var in evaluation.final.vars.items():
        if var.exported:
            value = _scalar(var)
            if value is not None:
                out[name] = value
    return out


def matrix_env(entry: MasterEntry, point: MultiNodePoint) -> dict[str, str]:
    """The env ``benchmark-multinode-tmpl.yml`` gives the runner launcher for this row."""
    env = {
        "MODEL": entry.model,
        "MODEL_PREFIX": entry.model_prefix,
        "IMAGE": entry.image,
        "FRAMEWORK": entry.framework,
        "PRECISION": entry.precision,
        "ISL": str(point.isl),
        "OSL": str(point.osl),
        "CONC_LIST": " ".join(str(c) for c in point.concs),
        "SPEC_DECODING": point.spec_decoding,
        "RANDOM_RANGE_RATIO": "0.8",
        "EXP_NAME": f"{entry.model_prefix}_{point.isl}_{point.osl}",
        "IS_MULTINODE": "true",
        "DISAGG": "true",
        "RUN_EVAL": "false",
        "EVAL_ONLY": "false",
        "SCENARIO_TYPE": point.scenario,
        "SCENARIO_SUBDIR": "agentic/" if point.scenario == "agentic-coding" else "fixed_seq_len/",
        "IS_AGENTIC": "1" if point.scenario == "agentic-coding" else "0",
        "GITHUB_WORKSPACE": "/workspace",
        "USER": "runner",
    }
    for word, worker in (("PREFILL", point.prefill), ("DECODE", point.decode)):
        if worker is None:
            raise NotUnderstoodError(f"point has no {word.lower()} role")
        env.update(
            {
                f"{word}_NUM_WORKERS": str(worker.num_worker),
                f"{word}_TP": str(worker.tp),
                f"{word}_PP_SIZE": str(worker.pp),
                f"{word}_DCP_SIZE": str(worker.dcp_size),
                f"{word}_PCP_SIZE": str(worker.pcp_size),
                f"{word}_EP": str(worker.ep),
                f"{word}_DP_ATTN": "true" if worker.dp_attn else "false",
            }
        )
    # ``export <prefill settings> <decode settings>``
    for worker in (point.prefill, point.decode):
        for key, value in worker.additional_settings if worker else ():
            env[key] = value
    return env


def _runner(snapshot: Snapshot, entry: MasterEntry, env: dict[str, str]) -> tuple[str, Evaluation]:
    for fleet in fleets_for_runner(snapshot, entry.runner):
        path = f"runners/launch_{fleet}.sh"
        if snapshot.is_file(path):
            return path, evaluate_script(_text(snapshot, path), path, env)
    raise NotUnderstoodError(f"no runner launcher for runner {entry.runner!r}")


def _launcher_path(snapshot: Snapshot, runner: Evaluation, runner_path: str) -> tuple[str, bool]:
    subdir = _value(runner, "BENCHMARK_SUBDIR", runner_path)
    name = _value(runner, "SCRIPT_NAME", runner_path)
    direct = snapshot.safe_path(f"benchmarks/{subdir}/{name}", origin=runner_path)
    if snapshot.is_file(direct):
        return direct, False
    moved = snapshot.safe_path(f"benchmarks/{subdir}/deprecated/{name}", origin=runner_path)
    if snapshot.is_file(moved):
        return moved, True
    raise NotUnderstoodError(f"{runner_path}: {direct} not in the tree")


def _submit_exports(snapshot: Snapshot, launcher: str, env: dict[str, str]) -> dict[str, str]:
    text = _text(snapshot, launcher)
    if 'cd "$GITHUB_WORKSPACE/benchmarks/multi_node/amd_utils"' not in text:
        raise NotUnderstoodError(f"{launcher}: does not run from amd_utils/")
    calls = _SUBMIT_CALL.findall(text)
    if len(calls) != 1:
        raise NotUnderstoodError(f"{launcher}: {len(calls)} 'bash ./submit.sh' calls, not one")
    evaluated = evaluate_script(text, launcher, env)
    # submit.sh sees what the launcher exports; its arguments are expanded from the same
    launcher_env = {**env, **_exported(evaluated)}
    args = calls[0].replace("\\\n", " ")
    submit_text = _text(snapshot, SUBMIT)
    # ``$1 …`` are the launcher's argument words, expanded in the launcher's state;
    # on the first line, so the script keeps its line numbers.
    script = f"set -- {args}; {submit_text}"
    submit = evaluate_script(script, SUBMIT, launcher_env)
    out = dict(launcher_env)
    for name in ("ENGINE", "xP", "yD", "MODEL_NAME", "GPUS_PER_NODE"):
        out[name] = _value(submit, name, SUBMIT)
    for word in _ROLE_WORD.values():
        for suffix in ("TP_SIZE", "ENABLE_EP", "ENABLE_DP"):
            out[f"{word}_{suffix}"] = _value(submit, f"{word}_{suffix}", SUBMIT)
        out[f"{word}_NODES"] = launcher_env.get(f"{word}_NODES", "")
    return out


def _model_config(snapshot: Snapshot, model_name: str) -> dict[str, str]:
    raw = snapshot.read(MODELS_VLLM)
    if raw is None:
        raise NotUnderstoodError(f"{MODELS_VLLM} not in the tree")
    data: Any = load_yaml_bytes(raw, MODELS_VLLM).data
    if not isinstance(data, Mapping):
        raise NotUnderstoodError(f"{MODELS_VLLM}: not a mapping")
    entry = data.get(model_name)
    if not isinstance(entry, Mapping):
        # the script prints an error and exits: nothing is served
        raise NotUnderstoodError(f"{MODELS_VLLM}: no entry {model_name!r}")
    defaults = {"prefill_flags": _DEFAULT_FLAGS, "decode_flags": _DEFAULT_FLAGS}
    out: dict[str, str] = {}
    for key in ("prefill_flags", "decode_flags", "env", "prefill_env", "decode_env"):
        value = entry.get(key, defaults.get(key, ""))
        if not isinstance(value, str):
            # bash_escape(value) raises in Python: the eval'd text is empty
            raise NotUnderstoodError(f"{MODELS_VLLM}: {model_name}.{key} is not a string")
        out[key] = value
    return out


def _rewrite(flags: str, tp_size: str, enable_ep: str, enable_dp: str) -> str:
    """``server_vllm.sh``'s TP ``sed`` rewrite (or append) and the EP/DP appends."""
    if "\n" in flags:
        raise NotUnderstoodError("serve flags span lines (sed works line by line)")
    if tp_size:
        if "--tensor-parallel-size" in flags:
            flags = re.sub(
                r"--tensor-parallel-size[ \t\f\v\r]+[0-9]+",
                "--tensor-parallel-size " + tp_size.replace("\\", "\\\\"),
                flags,
            )
        else:
            flags += " --tensor-parallel-size " + tp_size
    if enable_ep == "true" and "--enable-expert-parallel" not in flags:
        flags += " --enable-expert-parallel"
    if enable_dp == "true" and "--enable-dp-attention" not in flags:
        flags += " --enable-dp-attention"
    return flags


def _engine_env(pairs: str, origin: str) -> tuple[dict[str, str], list[PartialMarker]]:
    """``for env_pair in ${X}; do export "$env_pair"`` (word split, in order)."""
    env: dict[str, str] = {}
    partial: list[PartialMarker] = []
    for word in pairs.split():
        if not _SAFE_ENV_PAIR.match(word):
            partial.append(
                PartialMarker(
                    construct_name="amd-disagg-env",
                    path=MODELS_VLLM,
                    detail=f"{origin}: {word!r} is not a plain NAME=VALUE export",
                )
            )
            continue
        name, _, value = word.partition("=")
        env[name] = value
    return env, partial


def _serve_command(server_text: str, role: str, variables: Mapping[str, str]) -> list[str]:
    """The argv ``eval "$ROLE_CMD"`` runs: the assignment evaluated, then its value."""
    name = f"{_ROLE_WORD[role]}_CMD"
    match = next((m for m in _CMD.finditer(server_text) if m.group("name") == name), None)
    if match is None:
        raise NotUnderstoodError(f'{SERVER_VLLM}: no {name}="vllm serve …" assignment')
    assigned = evaluate_script(match.group(0).strip(), SERVER_VLLM, variables)
    command = _value(assigned, name, SERVER_VLLM)
    result = evaluate_launcher(command, SERVER_VLLM, {})
    if not result.served or result.argv is None or result.partial:
        raise NotUnderstoodError(f"{SERVER_VLLM}: {name} is not one plain vllm serve command")
    return result.argv


def _default(text: str, name: str) -> str:
    match = re.search(_DEFAULT_ASSIGN.format(name=name), text, re.M)
    if match is None:
        raise NotUnderstoodError(f"{SERVER_VLLM}: no {name} default")
    return match.group("value")


def _role_topology(workers: int, flags: str, tp: int, nodes: int | None) -> RoleTopology:
    words = shlex.split(flags)
    expert = "--enable-expert-parallel" in words
    dp_attention = "--enable-dp-attention" in words
    dp = 1
    for index, word in enumerate(words):
        if word == "--data-parallel-size" and index + 1 < len(words):
            dp = int(words[index + 1]) if words[index + 1].isdigit() else dp
    return RoleTopology(
        workers=workers,
        gpus_per_worker=tp * dp,
        tp=tp,
        ep=tp * dp if expert else 1,
        dp=dp,
        dp_attention=dp_attention,
        expert_parallel=expert,
        nodes=nodes,
    )


def read_point(snapshot: Snapshot, entry: MasterEntry, point: MultiNodePoint) -> DisaggEvidence:
    """The prefill/decode serve commands of one AMD vllm-disagg point.

    Raises :class:`NotUnderstoodError` when a step is not in the form this
    module reimplements; :class:`~provenance.errors.InputError` for a script
    the evaluator refuses.
    """
    if point.scenario != "fixed-seq-len":
        raise NotUnderstoodError(f"scenario {point.scenario} (agentic recipes not read)")
    env = matrix_env(entry, point)
    runner_path, runner = _runner(snapshot, entry, env)
    runner_vars = _exported(runner)
    launcher, via_deprecated = _launcher_path(snapshot, runner, runner_path)
    state = _submit_exports(snapshot, launcher, {**env, **runner_vars})
    if state["ENGINE"] != "vllm-disagg":
        raise NotUnderstoodError(f"{SUBMIT}: ENGINE is {state['ENGINE']!r}")
    for path in (JOB_SLURM, SERVER, SERVER_VLLM):
        _require(path, _text(snapshot, path))
    server_text = _text(snapshot, SERVER_VLLM)
    model = _model_config(snapshot, state["MODEL_NAME"])
    common_env, partial = _engine_env(model["env"], "env")
    workers = {"prefill": int(state["xP"]), "decode": int(state["yD"])}
    gpus_per_node = int(state["GPUS_PER_NODE"])
    roles: dict[str, RoleServe] = {}
    model_path = "/models/" + entry.model.rstrip("/").rsplit("/", 1)[-1]
    for role, word in _ROLE_WORD.items():
        flags = _rewrite(
            model[f"{role}_flags"],
            state[f"{word}_TP_SIZE"],
            state[f"{word}_ENABLE_EP"],
            state[f"{word}_ENABLE_DP"],
        )
        role_env, markers = _engine_env(model[f"{role}_env"], f"{role}_env")
        partial.extend(markers)
        variables = {
            "MODEL_PATH": model_path,
            "MODEL_NAME": state["MODEL_NAME"],
            "SERVED_MODEL": state["MODEL_NAME"],
            "SERVER_PORT": _default(server_text, "SERVER_PORT"),
            "PROXY_PING_PORT": _default(server_text, "PROXY_PING_PORT"),
            "NODE0_ADDR": NODE0_ADDR,
            f"{word}_SERVER_CONFIG": flags,
        }
        argv = _serve_command(server_text, role, variables)
        try:
            command = normalise_argv(argv, {**common_env, **role_env})
        except InputError as exc:
            raise NotUnderstoodError(f"{SERVER_VLLM}: {role} argv: {exc}") from None
        nodes_text = state.get(f"{word}_NODES", "")
        nodes = int(nodes_text) if nodes_text.isdigit() else None
        if nodes != workers[role]:
            # job.slurm allocates xP + yD nodes and server_vllm.sh gives each one engine
            partial.append(
                PartialMarker(
                    construct_name="amd-disagg-nodes",
                    path=JOB_SLURM,
                    detail=f"{word}_NODES={nodes_text or 'unset'} but {workers[role]} "
                    f"{role} workers (one node each)",
                )
            )
        roles[role] = RoleServe(
            flags=command.flags,
            topology=_role_topology(
                workers[role], flags, int(state[f"{word}_TP_SIZE"]), workers[role]
            ),
        )
    total = sum(r.topology.workers * r.topology.gpus_per_worker for r in roles.values())
    topology = Topology(
        kind="disaggregated",
        roles={name: r.topology for name, r in roles.items()},
        nodes=workers["prefill"] + workers["decode"],
        gpus_per_node=gpus_per_node,
        total_gpus=total,
    )
    return DisaggEvidence(
        launcher=launcher,
        runner_launcher=runner_path,
        roles=roles,
        topology=topology,
        partial=tuple(partial),
        via_deprecated=via_deprecated,
    )
