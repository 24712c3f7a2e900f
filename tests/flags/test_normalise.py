"""Every spelling of a vLLM flag maps to one canonical Flag (table-driven, real values).

Values are copied from vllm-project/recipes ``models/MiniMaxAI/MiniMax-M3.yaml``
(8959cf6) and InferenceX launchers / srt-slurm recipes (843c6254f, #2314), so
these tests run without the corpus.
"""

from __future__ import annotations

import pytest

from provenance.errors import InputError
from provenance.model.flags import FlagSet
from provenance.normalise.canonical import (
    ConfigMerge,
    NormalisedCommand,
    canonical_text,
    canonical_value,
    model_basename,
    normalise_argv,
    normalise_mapping,
    normalise_mapping_command,
    render_argv,
    render_command,
    render_env,
    split_key,
)

MODEL = "MiniMaxAI/MiniMax-M3"

# MiniMax-M3 nvfp4 variant extra_args (recipes 8959cf6), dotted spelling.
NVFP4_DOTTED = [
    "--trust-remote-code",
    "--kv-cache-dtype",
    "fp8",
    "--attention_config.backend",
    "FLASHINFER",
    "--attention_config.use_trtllm_attention",
    "true",
    "--attention_config.indexer_kv_dtype",
    "fp8",
    "--attention_config.minimax_m3_msa_decode_backend",
    "cutlass",
]
# The same attention config as one JSON (InferenceX srt-slurm decode, #2314).
ATTN_JSON = (
    '{"backend": "FLASHINFER", "use_trtllm_attention": true, "indexer_kv_dtype": "fp8",'
    ' "minimax_m3_msa_decode_backend": "cutlass"}'
)
SPEC_GQA = (
    '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA",'
    '"num_speculative_tokens":3,"attention_backend":"FLASH_ATTN"}'
)


def flags(*argv: str, env: dict[str, object] | None = None) -> FlagSet:
    return normalise_argv(list(argv), env).flags


# ---------------------------------------------------------------------------
# Spellings that must give equal FlagSets
# ---------------------------------------------------------------------------

EQUIVALENT: list[tuple[str, list[str], list[str]]] = [
    ("space-vs-equals", ["--block-size", "128"], ["--block-size=128"]),
    ("hyphen-vs-underscore", ["--max-num-seqs", "1024"], ["--max_num_seqs", "1024"]),
    ("mixed-separators", ["--max_num-batched_tokens", "16384"], ["--max-num-batched-tokens=16384"]),
    ("bare-boolean-vs-true", ["--trust-remote-code"], ["--trust-remote-code", "true"]),
    ("bare-boolean-vs-True", ["--language-model-only"], ["--language-model-only=True"]),
    ("numeric-0.9-vs-0.90", ["--gpu-memory-utilization", "0.9"], ["--gpu-memory-utilization=0.90"]),
    ("int-vs-float-text", ["--max-model-len", "9472"], ["--max-model-len", "9472.0"]),
    ("leading-zero", ["--stream-interval", "32"], ["--stream-interval", "032"]),
    ("short-tp", ["-tp", "4"], ["--tensor-parallel-size", "4"]),
    ("short-dp", ["-dp", "4"], ["--data-parallel-size=4"]),
    ("short-pp-equals", ["-pp=2"], ["--pipeline-parallel-size", "2"]),
    ("short-ep-boolean", ["-ep", MODEL], ["--enable-expert-parallel", "--model", MODEL]),
    ("short-dpr-is-start-rank", ["-dpr", "4"], ["--data-parallel-start-rank", "4"]),
    ("short-dpp-is-rpc-port", ["-dpp", "13345"], ["--data-parallel-rpc-port=13345"]),
    ("short-q", ["-q", "fp8"], ["--quantization", "fp8"]),
    (
        "dotted-underscore-vs-hyphen-head",
        ["--attention_config.indexer_kv_dtype", "fp8"],
        ["--attention-config.indexer_kv_dtype", "fp8"],
    ),
    (
        "dotted-vs-json",
        NVFP4_DOTTED[3:],
        ["--attention-config", ATTN_JSON],
    ),
    (
        "dotted-quoted-json-string",
        ["--attention-config.indexer_kv_dtype", '"fp8"'],
        ["--attention-config.indexer_kv_dtype", "fp8"],
    ),
    (
        "dotted-equals",
        ["--attention_config.backend=FLASHINFER"],
        ["--attention_config.backend", "FLASHINFER"],
    ),
    (
        "json-key-order-and-space",
        ["--speculative-config", SPEC_GQA],
        [
            "--speculative_config",
            '{"attention_backend": "FLASH_ATTN", "num_speculative_tokens": 3, '
            '"model": "Inferact/MiniMax-M3-EAGLE3-GQA", "method": "eagle3"}',
        ],
    ),
    (
        "json-true-vs-True-string",
        ["--attention-config", '{"use_trtllm_attention": true}'],
        ["--attention_config.use_trtllm_attention", "True"],
    ),
    ("json-number-vs-string", ["--compilation-config", '{"mode": 3}'], ["-cc.mode", "3"]),
    (
        "draft-model-local-path-vs-hf-id",
        ["--speculative-config", '{"model": "/data/models/MiniMax-M3-EAGLE3-GQA"}'],
        ["--speculative-config", '{"model": "Inferact/MiniMax-M3-EAGLE3-GQA"}'],
    ),
    ("with-and-without-vllm-serve", ["vllm", "serve", MODEL, "-tp", "8"], [MODEL, "-tp", "8"]),
    ("serve-only-prefix", ["serve", MODEL, "-tp", "8"], ["--model", MODEL, "-tp", "8"]),
    ("model-flag-equals", ["--model=" + MODEL], [MODEL]),
    ("negative-number-value", ["--seed", "-1"], ["--seed=-1"]),
    # XiaomiMiMo/MiMo-V2.5-Pro base_args (recipes 8959cf6): one element, rendered unquoted.
    ("flag-and-value-in-one-element", ["--max-model-len auto"], ["--max-model-len", "auto"]),
    (
        "space-only-in-value-kept",
        ['--default-chat-template-kwargs={"thinking_mode": "enabled"}'],
        ["--default-chat-template-kwargs", '{"thinking_mode":"enabled"}'],
    ),
]


@pytest.mark.parametrize(
    ("left", "right"), [(a, b) for _, a, b in EQUIVALENT], ids=[i for i, _, _ in EQUIVALENT]
)
def test_equivalent_spellings(left: list[str], right: list[str]) -> None:
    a = normalise_argv(left)
    b = normalise_argv(right)
    assert a == b
    assert a.flags == b.flags
    assert hash(a.flags) == hash(b.flags)


# ---------------------------------------------------------------------------
# Exact canonical output
# ---------------------------------------------------------------------------

EXPECTED: list[tuple[str, list[str], dict[str, str]]] = [
    (
        "minimax-m3-nvfp4-variant",
        ["vllm", "serve", "nvidia/MiniMax-M3-NVFP4", "--block-size", "128", *NVFP4_DOTTED],
        {
            "block_size": "128",
            "trust_remote_code": "true",
            "kv_cache_dtype": "fp8",
            "attention_config.backend": "FLASHINFER",
            "attention_config.use_trtllm_attention": "true",
            "attention_config.indexer_kv_dtype": "fp8",
            "attention_config.minimax_m3_msa_decode_backend": "cutlass",
        },
    ),
    (
        "no-x-is-false",
        ["--no-enable-prefix-caching", "--no-enable-flashinfer-autotune"],
        {"enable_prefix_caching": "false", "enable_flashinfer_autotune": "false"},
    ),
    (
        "speculative-json-exploded",
        ["--speculative-config", SPEC_GQA],
        {
            "speculative_config.method": "eagle3",
            "speculative_config.model": "MiniMax-M3-EAGLE3-GQA",
            "speculative_config.num_speculative_tokens": "3",
            "speculative_config.attention_backend": "FLASH_ATTN",
        },
    ),
    (
        "nested-json-recurses",
        [
            "--compilation-config",
            '{"cudagraph_mode":"FULL_DECODE_ONLY","custom_ops":["+rms_norm"],"pass_config":{}}',
        ],
        {
            "compilation_config.cudagraph_mode": "FULL_DECODE_ONLY",
            "compilation_config.custom_ops": '["+rms_norm"]',
            "compilation_config.pass_config": "{}",
        },
    ),
    (
        "chat-template-kwargs",
        ["--default-chat-template-kwargs", '{"thinking_mode": "enabled"}'],
        {"default_chat_template_kwargs.thinking_mode": "enabled"},
    ),
    (
        "hf-overrides-nested",
        [
            "--hf-overrides",
            '{"text_config":{"rope_scaling":{"rope_type":"yarn","factor":2.0,'
            '"original_max_position_embeddings":524288}}}',
        ],
        {
            "hf_overrides.text_config.rope_scaling.rope_type": "yarn",
            "hf_overrides.text_config.rope_scaling.factor": "2",
            "hf_overrides.text_config.rope_scaling.original_max_position_embeddings": "524288",
        },
    ),
    (
        "dotted-list-append",
        ["-cc.custom_ops+", "-quant_fp8", "-cc.custom_ops+=+silu_mul,-rms_norm"],
        {"compilation_config.custom_ops": '["-quant_fp8","+silu_mul","-rms_norm"]'},
    ),
    (
        "dotted-human-readable-int",
        ["--kv-transfer-config.kv_buffer_size", "1k"],
        {"kv_transfer_config.kv_buffer_size": "1000"},
    ),
    (
        "json-key-with-dots-is-quoted",
        [
            "--kv-transfer-config",
            '{"kv_connector":"LMCacheConnectorV1","kv_connector_extra_config":{"lmcache.mp.port":5555}}',
        ],
        {
            "kv_transfer_config.kv_connector": "LMCacheConnectorV1",
            'kv_transfer_config.kv_connector_extra_config."lmcache.mp.port"': "5555",
        },
    ),
    (
        "dotted-null",
        ["--hf-overrides.key12.key13", "null"],
        {"hf_overrides.key12.key13": "null"},
    ),
    ("lists-compact-json", ["--cuda-graph-sizes", "1", "2", "4"], {"cuda_graph_sizes": "[1,2,4]"}),
    ("list-of-one", ["--cuda-graph-sizes", "512"], {"cuda_graph_sizes": "[512]"}),
    (
        "revision-kept-verbatim",
        ["--revision", "1.10", "--tokenizer", "org/tok"],
        {"revision": "1.10", "tokenizer": "org/tok"},
    ),
    (
        "env-vars",
        ["--block-size", "128"],
        {
            "block_size": "128",
            "env:VLLM_FLOAT32_MATMUL_PRECISION": "high",
            "env:NCCL_CUMEM_ENABLE": "1",
        },
    ),
    (
        "unknown-flag-value-and-bare",
        ["--some-new-flag", "x", "--other-new-flag"],
        {"some_new_flag": "x", "other_new_flag": "true"},
    ),
]


@pytest.mark.parametrize(
    ("argv", "expected"), [(a, e) for _, a, e in EXPECTED], ids=[i for i, _, _ in EXPECTED]
)
def test_canonical_output(argv: list[str], expected: dict[str, str]) -> None:
    env: dict[str, object] | None = None
    if any(k.startswith("env:") for k in expected):
        env = {k[4:]: v for k, v in expected.items() if k.startswith("env:")}
        env["NCCL_CUMEM_ENABLE"] = 1  # an int from YAML becomes "1"
    assert normalise_argv(argv, env).flags == FlagSet(expected)


def test_identity_flags_kept_apart() -> None:
    cmd = normalise_argv(
        [
            "vllm",
            "serve",
            MODEL,
            "--served-model-name",
            "minimax",
            "--host",
            "0.0.0.0",
            "--port=8000",
            "-tp",
            "8",
        ]
    )
    assert cmd == NormalisedCommand(
        model=MODEL,
        served_model_name="minimax",
        host="0.0.0.0",
        port="8000",
        flags=FlagSet({"tensor_parallel_size": "8"}),
    )
    assert cmd.model_name == "MiniMax-M3"


def test_served_model_name_takes_several_names() -> None:
    cmd = normalise_argv([MODEL, "--served-model-name", "a", "b", "--port", "$PORT"])
    assert cmd.served_model_name == '["a","b"]'
    assert cmd.port == "$PORT"
    assert render_command(cmd)[:7] == [
        "vllm",
        "serve",
        MODEL,
        "--served-model-name",
        "a",
        "b",
        "--port",
    ]


def test_boolean_flag_before_model_leaves_model_positional() -> None:
    cmd = normalise_argv(["vllm", "serve", "--trust-remote-code", MODEL, "-tp", "4"])
    assert cmd.model == MODEL
    assert cmd.flags == FlagSet({"trust_remote_code": "true", "tensor_parallel_size": "4"})


# ---------------------------------------------------------------------------
# Last wins, and how JSON and dotted forms combine
# ---------------------------------------------------------------------------


def test_explicit_default_false_is_dropped_but_not_for_version_dependent_defaults() -> None:
    assert flags("--no-enable-expert-parallel", "--no-trust-remote-code") == FlagSet()
    assert flags("--enable-expert-parallel", "--no-enable-expert-parallel") == FlagSet()
    assert flags("--no-enable-prefix-caching") == FlagSet({"enable_prefix_caching": "false"})
    assert normalise_argv(["--no-enable-expert-parallel"]).notes == (
        "enable_expert_parallel=false is vLLM's default: dropped",
    )
    assert flags("--no-enable-chunked-prefill") == FlagSet({"enable_chunked_prefill": "false"})


def test_last_plain_occurrence_wins() -> None:
    assert flags("--max-num-seqs", "256", "--max_num_seqs=512")["max_num_seqs"] == "512"
    assert (
        flags("--enable-prefix-caching", "--no-enable-prefix-caching")["enable_prefix_caching"]
        == "false"
    )
    assert (
        flags("--no-enable-prefix-caching", "--enable-prefix-caching")["enable_prefix_caching"]
        == "true"
    )
    assert flags("-tp", "2", "--tensor-parallel-size", "4")["tensor_parallel_size"] == "4"


def test_later_json_replaces_earlier_json_whole() -> None:
    got = flags(
        "--attention-config",
        '{"backend": "X", "indexer_kv_dtype": "fp8"}',
        "--attention-config",
        '{"backend": "Y"}',
    )
    assert got == FlagSet({"attention_config.backend": "Y"})


def test_dotted_occurrences_merge_and_later_wins() -> None:
    got = flags(
        "--attention_config.backend",
        "A",
        "--attention_config.indexer_kv_dtype",
        "fp8",
        "--attention-config.backend",
        "B",
    )
    assert got == FlagSet(
        {"attention_config.backend": "B", "attention_config.indexer_kv_dtype": "fp8"}
    )


# InferenceX minimaxm3_fp8_b200.sh (deprecated, #2120 era) mixes both spellings.
FP8_B200_MIXED = [
    "--attention-config",
    '{"backend": "FLASHINFER", "use_trtllm_attention": true}',
    "--attention-config.indexer_kv_dtype",
    '"fp8"',
]


def test_vllm_rule_dotted_replaces_json_wherever_it_stands() -> None:
    # vLLM's FlexibleArgumentParser appends the merged dotted dict as a final
    # --attention-config '<json>'; argparse keeps the last value.
    expected = FlagSet({"attention_config.indexer_kv_dtype": "fp8"})
    assert flags(*FP8_B200_MIXED) == expected
    (note,) = normalise_argv(FP8_B200_MIXED).notes
    assert "attention_config.backend, attention_config.use_trtllm_attention" in note
    assert normalise_argv(FP8_B200_MIXED, merge=ConfigMerge.MERGE).notes == ()
    reordered = FP8_B200_MIXED[2:] + FP8_B200_MIXED[:2]
    assert flags(*reordered) == expected


def test_merge_rule_combines_json_and_dotted_in_order() -> None:
    merged = normalise_argv(FP8_B200_MIXED, merge=ConfigMerge.MERGE).flags
    assert merged == FlagSet(
        {
            "attention_config.backend": "FLASHINFER",
            "attention_config.use_trtllm_attention": "true",
            "attention_config.indexer_kv_dtype": "fp8",
        }
    )
    later_json = normalise_argv(
        ["--attention_config.backend", "A", "--attention-config", '{"backend": "B"}'],
        merge=ConfigMerge.MERGE,
    ).flags
    assert later_json == FlagSet({"attention_config.backend": "B"})


def test_short_and_long_dotted_spellings_merge_in_merge_mode() -> None:
    argv = ["-cc.mode", "3", "--compilation_config.cudagraph_mode", "PIECEWISE"]
    assert normalise_argv(argv, merge=ConfigMerge.MERGE).flags == FlagSet(
        {"compilation_config.mode": "3", "compilation_config.cudagraph_mode": "PIECEWISE"}
    )
    same_spelling = ["-cc.mode", "3", "-cc.cudagraph_mode", "PIECEWISE"]
    assert (
        normalise_argv(same_spelling).flags == normalise_argv(argv, merge=ConfigMerge.MERGE).flags
    )


def test_dotted_replaces_plain_scalar_of_same_flag() -> None:
    assert flags(
        "--compilation-config", '{"mode": 3}', "-cc.cudagraph_mode", "PIECEWISE"
    ) == FlagSet({"compilation_config.cudagraph_mode": "PIECEWISE"})


# ---------------------------------------------------------------------------
# srt-slurm vllm_config mappings (InferenceX #2314, b300-fp4 mtp 1p1d)
# ---------------------------------------------------------------------------

PREFILL_2314 = {
    "no-enable-flashinfer-autotune": True,
    "tensor-parallel-size": 4,
    "pipeline-parallel-size": 1,
    "trust-remote-code": True,
    "no-enable-prefix-caching": True,
    "kv-transfer-config": '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}',
    "attention-config": '{"backend": "FLASHINFER", "use_trtllm_attention": true, '
    '"indexer_kv_dtype": "fp8"}',
    "block-size": 128,
    "gpu-memory-utilization": 0.9,
    "max-model-len": 9472,
    "language-model-only": True,
    "kv-cache-dtype": "fp8",
    "speculative-config": '{"method":"eagle3","model":"Inferact/MiniMax-M3-EAGLE3-GQA",'
    '"num_speculative_tokens":1,"attention_backend":"FLASH_ATTN"}',
    "stream-interval": 32,
    "max-cudagraph-capture-size": 2048,
    "max-num-batched-tokens": 16384,
}
PREFILL_ENV = {"VLLM_FLOAT32_MATMUL_PRECISION": "high", "UCX_TLS": "cuda_copy,cuda_ipc,rc"}


def test_srt_slurm_mapping_equals_the_argv_it_stands_for() -> None:
    argv = [
        "--no-enable-flashinfer-autotune",
        "--tensor-parallel-size", "4",
        "--pipeline-parallel-size", "1",
        "--trust-remote-code",
        "--no-enable-prefix-caching",
        "--kv-transfer-config.kv_connector", "NixlConnector",
        "--kv-transfer-config.kv_role", "kv_both",
        "--attention_config.backend", "FLASHINFER",
        "--attention_config.use_trtllm_attention", "true",
        "--attention_config.indexer_kv_dtype", "fp8",
        "--block-size", "128",
        "--gpu-memory-utilization", "0.90",
        "--max-model-len", "9472",
        "--language-model-only",
        "--kv-cache-dtype", "fp8",
        "--speculative-config", '{"method": "eagle3", "model": "Inferact/MiniMax-M3-EAGLE3-GQA", '
        '"num_speculative_tokens": 1, "attention_backend": "FLASH_ATTN"}',
        "--stream-interval", "32",
        "--max-cudagraph-capture-size", "2048",
        "--max-num-batched-tokens", "16384",
    ]  # fmt: skip
    assert normalise_mapping(PREFILL_2314, PREFILL_ENV) == normalise_argv(argv, PREFILL_ENV).flags


def test_srt_slurm_prefill_vs_decode_num_speculative_tokens() -> None:
    decode = dict(
        PREFILL_2314,
        **{"speculative-config": str(PREFILL_2314["speculative-config"]).replace(":1,", ":3,")},
    )
    diff = normalise_mapping(PREFILL_2314).diff(normalise_mapping(decode))
    assert diff.changed == {"speculative_config.num_speculative_tokens": ("1", "3")}
    assert not diff.only_left and not diff.only_right


MAPPING_EQUIVALENT: list[tuple[str, dict[str, object], dict[str, object]]] = [
    ("yaml-bool-vs-string", {"trust-remote-code": True}, {"trust-remote-code": "true"}),
    ("yaml-float-vs-string", {"gpu-memory-utilization": 0.9}, {"gpu-memory-utilization": "0.90"}),
    ("yaml-int-vs-string", {"block-size": 128}, {"block_size": "128"}),
    (
        "yaml-mapping-vs-json-string",
        {"attention-config": {"backend": "FLASHINFER", "use_trtllm_attention": True}},
        {"attention-config": '{"use_trtllm_attention": true, "backend": "FLASHINFER"}'},
    ),
    (
        "dotted-yaml-key-vs-json",
        {"attention-config.indexer_kv_dtype": "fp8"},
        {"attention_config": {"indexer_kv_dtype": "fp8"}},
    ),
    ("false-vs-no-x", {"enable-prefix-caching": False}, {"no-enable-prefix-caching": True}),
    # InferenceX agentic gb300-fp4 recipes write enable-expert-parallel: false.
    (
        "false-by-default-vs-absent",
        {"enable-expert-parallel": False, "block-size": 128},
        {"block-size": 128},
    ),
    ("leading-dashes-allowed", {"--block-size": 128}, {"block-size": 128}),
    # InferenceX DEP workers write tensor-parallel-size: 1 and pipeline-parallel-size: 1.
    (
        "one-by-default-vs-absent",
        {"tensor-parallel-size": 1, "pipeline-parallel-size": "1", "data-parallel-size": 2},
        {"data-parallel-size": 2},
    ),
]


@pytest.mark.parametrize(
    ("left", "right"),
    [(a, b) for _, a, b in MAPPING_EQUIVALENT],
    ids=[i for i, _, _ in MAPPING_EQUIVALENT],
)
def test_mapping_equivalent_spellings(left: dict[str, object], right: dict[str, object]) -> None:
    assert normalise_mapping(left) == normalise_mapping(right)


def test_mapping_identity_keys() -> None:
    cmd = normalise_mapping_command(
        {"served-model-name": "minimax", "port": 8000, "block-size": 128}
    )
    assert (cmd.served_model_name, cmd.port, cmd.flags) == (
        "minimax",
        "8000",
        FlagSet({"block_size": "128"}),
    )


# ---------------------------------------------------------------------------
# Strict: anything not understood is an InputError naming it
# ---------------------------------------------------------------------------

BAD_ARGV: list[tuple[str, list[str], str]] = [
    ("optimization-level-version-dependent", ["-O3"], "-O3"),
    ("unknown-short-option", ["-x", "1"], "-x"),
    ("uppercase-flag", ["--Block-Size", "128"], "Block-Size"),
    ("bare-double-dash", ["--", MODEL], "'--'"),
    ("two-positionals", [MODEL, "other"], "other"),
    ("positional-after-model-flag", ["--model", MODEL, "x"], "'x'"),
    ("model-twice", ["--model", "a", "--model", "b"], "twice"),
    ("dotted-without-value", ["--attention_config.backend"], "expects a value"),
    ("empty-sub-key", ["--attention_config..backend", "x"], "empty sub-key"),
    ("negation-with-value", ["--no-enable-prefix-caching=true"], "negation"),
    ("config-file", ["--config", "x.yaml"], "--config"),
    ("not-serve", ["vllm", "bench", "serve"], "vllm serve"),
    ("host-without-value", ["--host"], "--host"),
    ("space-in-mapping-key", ["--Max Model"], "not a flag name"),
    ("served-model-name-empty", ["--served-model-name"], "at least one"),
    ("bool-flag-then-extra-positional", [MODEL, "--trust-remote-code", "yes"], "yes"),
    (
        "short-and-long-dotted-mixed",
        ["-cc.mode", "3", "--compilation-config.cudagraph_mode", "PIECEWISE"],
        "-cc.* and --compilation-config.*",
    ),
]


@pytest.mark.parametrize(
    ("argv", "needle"), [(a, n) for _, a, n in BAD_ARGV], ids=[i for i, _, _ in BAD_ARGV]
)
def test_bad_argv_raises_input_error(argv: list[str], needle: str) -> None:
    with pytest.raises(InputError) as info:
        normalise_argv(argv)
    assert needle in info.value.diagnostic()


BAD_MAPPINGS: list[tuple[str, dict[object, object], str]] = [
    ("null-value", {"block-size": None}, "block-size"),
    ("negation-false", {"no-enable-prefix-caching": False}, "negation"),
    ("non-string-key", {1: 2}, "1"),
    ("config-file", {"config": "x.yaml"}, "--config"),
    ("bad-env-name", {"block-size": 1}, "not an environment variable"),
]


@pytest.mark.parametrize(
    ("config", "needle"), [(c, n) for _, c, n in BAD_MAPPINGS], ids=[i for i, _, _ in BAD_MAPPINGS]
)
def test_bad_mapping_raises_input_error(config: dict[object, object], needle: str) -> None:
    env = {"BAD-NAME": "x"} if needle == "not an environment variable" else None
    with pytest.raises(InputError) as info:
        normalise_mapping(config, env, source="r.yaml", key_prefix="backend.vllm_config.prefill")  # type: ignore[arg-type]
    text = info.value.diagnostic()
    assert needle in text
    assert "r.yaml" in text


# ---------------------------------------------------------------------------
# Values and rendering
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("True", "true"),
        ("FALSE", "false"),
        ("0.90", "0.9"),
        ("1.0", "1"),
        ("+7", "7"),
        ("-0.0", "0"),
        ("1e-5", "1e-05"),
        ("1e400", "1e400"),
        ('[1, 2.0, "3"]', "[1,2,3]"),
        ("[not json", "[not json"),
        ("FLASHINFER", "FLASHINFER"),
        ("1_000", "1_000"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert canonical_text(text) == canonical
    assert canonical_text(canonical) == canonical


@pytest.mark.parametrize(
    ("value", "canonical"), [(True, "true"), (0.9, "0.9"), (2.0, "2"), (None, "null"), ([], "[]")]
)
def test_canonical_value(value: object, canonical: str) -> None:
    assert canonical_value(value) == canonical


def test_huge_and_special_numbers_round_trip() -> None:
    for value in (10**40, 2**63, 1e300, float("inf"), float("nan"), -(10**31)):
        flags = normalise_mapping({"hf-overrides": {"x": value}, "seed": value})
        assert normalise_argv(render_argv(flags)).flags == flags


def test_split_key_undoes_quoting() -> None:
    assert split_key('kv_transfer_config.kv_connector_extra_config."lmcache.mp.port"') == [
        "kv_transfer_config",
        "kv_connector_extra_config",
        "lmcache.mp.port",
    ]
    assert split_key('a."".b') == ["a", "", "b"]
    with pytest.raises(InputError):
        split_key('a."b"c')


def test_model_basename() -> None:
    assert model_basename("/data/models/MiniMax-M3-EAGLE3-GQA/") == "MiniMax-M3-EAGLE3-GQA"
    assert model_basename("Inferact/MiniMax-M3-EAGLE3") == "MiniMax-M3-EAGLE3"


def test_render_argv_shape() -> None:
    fs = normalise_argv(
        [
            MODEL,
            "--block-size",
            "128",
            "--no-enable-prefix-caching",
            "--trust-remote-code",
            "--seed",
            "-1",
            *NVFP4_DOTTED[3:],
        ],
        {"VLLM_FLOAT32_MATMUL_PRECISION": "high"},
    ).flags
    argv = render_argv(fs)
    assert argv == [
        "--block-size",
        "128",
        "--no-enable-prefix-caching",
        "--seed=-1",
        "--trust-remote-code",
        "--attention-config",
        '{"backend":"FLASHINFER","indexer_kv_dtype":"fp8","minimax_m3_msa_decode_backend":"cutlass","use_trtllm_attention":true}',
    ]
    assert render_env(fs) == {"VLLM_FLOAT32_MATMUL_PRECISION": "high"}
    assert normalise_argv(argv, render_env(fs)).flags == fs


def test_cache_keeps_env_value_types_apart() -> None:
    assert normalise_argv(["-tp", "1"], {"X": 1}).flags["env:X"] == "1"
    assert normalise_argv(["-tp", "1"], {"X": True}).flags["env:X"] == "true"
    assert normalise_argv(["-tp", "1"], {"X": 1.0}).flags["env:X"] == "1.0"
    unhashable: dict[str, object] = {"X": ["a"]}
    with pytest.raises(InputError, match="non-scalar"):
        normalise_argv(["-tp", "1"], unhashable)
