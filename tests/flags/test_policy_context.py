"""The policy with context: aliases, context rules, compared defaults, env classes.

Each default rule and alias is exercised on hand-made commands (both spellings, both
roles, with and without the condition) and on real MiniMax-M3 commands (rendered by
the ported builder from the embedded recipe, and read from the embedded evidence).
Hypothesis checks the properties the audit relies on: context only removes keys,
applying it twice changes nothing, and every spelling of a knob gives one result.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.errors import InputError
from provenance.model.flags import FlagClass, FlagSet
from provenance.normalise.aliases import DEFAULT_ALIASES
from provenance.normalise.canonical import normalise_argv
from provenance.normalise.context import DEFAULT_CONTEXT_RULES
from provenance.normalise.policy import COMPARED_DEFAULTS, Policy, default_policy, load_policy

REPO = Path(__file__).resolve().parents[2]
POLICY = default_policy()


def effective(argv: list[str], role: str | None, env: dict[str, str] | None = None) -> FlagSet:
    return POLICY.effective(normalise_argv(["vllm", "serve", "M", *argv], env).flags, role)


# --- context rules, hand-made ----------------------------------------------------


ENCODER = ["--mm-encoder-tp-mode", "data", "--mm-encoder-attn-backend", "FLASHINFER"]


def test_encoder_flags_are_inert_under_language_model_only() -> None:
    flags = effective([*ENCODER, "--language-model-only"], "serve")
    assert "mm_encoder_tp_mode" not in flags and "mm_encoder_attn_backend" not in flags
    assert flags["language_model_only"] == "true"


@pytest.mark.parametrize("role", ["serve", "prefill", "decode"])
def test_encoder_flags_count_when_the_encoder_is_loaded(role: str) -> None:
    flags = effective(ENCODER, role)
    assert flags["mm_encoder_tp_mode"] == "data"
    assert flags["mm_encoder_attn_backend"] == "FLASHINFER"
    # an explicit --no-language-model-only is vLLM's default: the encoder is loaded
    assert "mm_encoder_tp_mode" in effective([*ENCODER, "--no-language-model-only"], role)


DECODE_KERNEL = ["--attention_config.minimax_m3_msa_decode_backend", "cutlass"]


def test_decode_kernel_is_inert_on_a_prefill_worker() -> None:
    assert "attention_config.minimax_m3_msa_decode_backend" not in effective(
        DECODE_KERNEL, "prefill"
    )


@pytest.mark.parametrize("role", ["decode", "serve", None])
def test_decode_kernel_counts_where_decode_runs(role: str | None) -> None:
    flags = effective(DECODE_KERNEL, role)
    assert flags["attention_config.minimax_m3_msa_decode_backend"] == "cutlass"


def test_decode_kernel_env_spelling_is_inert_on_prefill_too() -> None:
    env = {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "cutlass"}
    assert effective([], "prefill", env) == FlagSet()
    assert effective([], "decode", env) == FlagSet(
        {"attention_config.minimax_m3_msa_decode_backend": "cutlass"}
    )


def test_every_default_context_rule_has_an_id_basis_and_condition() -> None:
    ids = [rule.id for rule in DEFAULT_CONTEXT_RULES]
    assert len(ids) == len(set(ids))
    for rule in DEFAULT_CONTEXT_RULES:
        assert rule.roles or rule.when, rule.id
        assert "#" in rule.basis or "spec §" in rule.basis, rule.id


def test_inert_rule_names_the_rule() -> None:
    major = POLICY.major(normalise_argv(["serve", "M", *ENCODER, "--language-model-only"]).flags)
    rule = POLICY.inert_rule("mm_encoder_tp_mode", "serve", major)
    assert rule is not None and rule.id == "encoder-without-encoder"
    assert POLICY.inert_rule("language_model_only", "serve", major) is None


# --- aliases, hand-made -----------------------------------------------------------


def test_env_and_config_spellings_of_the_msa_decode_backend_are_one_flag() -> None:
    by_env = effective([], "decode", {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "cutlass"})
    by_key = effective(DECODE_KERNEL, "decode")
    both = effective(DECODE_KERNEL, "decode", {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "cutlass"})
    assert by_env == by_key == both


def test_attention_backend_shorthand_is_the_config_key() -> None:
    assert effective(["--attention-backend", "TRITON_ATTN"], "serve") == effective(
        ["--attention-config.backend", "TRITON_ATTN"], "serve"
    )
    assert POLICY.classify("attention_backend") is FlagClass.MAJOR
    assert "spelling of attention_config.backend" in POLICY.basis("attention_backend")


def test_two_spellings_with_different_values_both_stay() -> None:
    flags = effective(DECODE_KERNEL, "decode", {"VLLM_MINIMAX_M3_MSA_DECODE_BACKEND": "triton"})
    assert flags["attention_config.minimax_m3_msa_decode_backend"] == "cutlass"
    assert flags["env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND"] == "triton"
    assert POLICY.aliases.conflicts(flags) == ["attention_config.minimax_m3_msa_decode_backend"]


def test_every_alias_spelling_is_classed_as_its_canonical_key() -> None:
    for alias in DEFAULT_ALIASES:
        for spelling in alias.spellings:
            assert POLICY.classify(spelling) is POLICY.classify(alias.canonical), spelling


# --- compared defaults -------------------------------------------------------------


def test_explicit_tp1_is_dropped_but_compared_as_one() -> None:
    assert "tensor_parallel_size" not in effective(["--tensor-parallel-size", "1"], "serve")
    assert POLICY.compared_default("tensor_parallel_size") == "1"
    assert POLICY.compared_default("language_model_only") is None
    assert set(COMPARED_DEFAULTS) == {
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
    }


# --- environment classes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("env:AIPERF_SERVER_METRICS_URLS", FlagClass.HARNESS),
        ("env:AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", FlagClass.HARNESS),
        ("env:WEKA_LOADER_OVERRIDE", FlagClass.HARNESS),
        ("env:RUNAI_STREAMER_CONCURRENCY", FlagClass.HARNESS),
        ("env:HF_HUB_OFFLINE", FlagClass.HARNESS),
        ("env:NCCL_IB_HCA", FlagClass.HARNESS),
        ("env:NCCL_ALGO", FlagClass.MAJOR),
        ("env:VLLM_USE_SIMPLE_KV_OFFLOAD", FlagClass.MAJOR),
        ("env:VLLM_USE_BREAKABLE_CUDAGRAPH", FlagClass.TUNING),
        ("env:VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT", FlagClass.MAJOR),
        ("env:VLLM_ROCM_QUICK_REDUCE_CAST_BF16_TO_FP16", FlagClass.MAJOR),
        ("env:VLLM_SOME_NEW_BACKEND", FlagClass.MAJOR),
        ("env:VLLM_FLASHINFER_ALLREDUCE_BACKEND", FlagClass.TUNING),
        ("safetensors_load_strategy", FlagClass.HARNESS),
        ("enable_prompt_tokens_details", FlagClass.FUNCTIONAL),
    ],
)
def test_environment_classes(key: str, expected: FlagClass) -> None:
    assert POLICY.classify(key) is expected
    assert POLICY.is_classified(key)


def test_unknown_names_stay_major_and_unclassified() -> None:
    assert POLICY.classify("env:SOMETHING_NEW") is FlagClass.MAJOR
    assert not POLICY.is_classified("env:SOMETHING_NEW")


def test_every_env_name_of_the_embedded_minimax_m3_evidence_is_classified() -> None:
    """The policy table was built for MiniMax-M3; the other models' env names (53 in the
    all-models ledger) stay major by default until classified, and the audit lists those
    that decide a verdict (``summary.unclassified_env``) so the table can grow."""
    from provenance.store.evidence import EvidenceStore

    unknown = {
        key
        for record in EvidenceStore(REPO / "evidence").iter_records()
        if "MiniMax-M3" in record.checkpoint
        for flags in record.roles.values()
        for key in flags
        if key.startswith("env:") and not POLICY.is_classified(key)
    }
    assert not unknown


# --- overrides -----------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "provenance.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_context_rule_disabled_by_override(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "[context.decode-kernel-on-prefill]\nenabled = false\n"))
    flags = normalise_argv(["serve", "M", *DECODE_KERNEL]).flags
    assert "attention_config.minimax_m3_msa_decode_backend" in policy.effective(flags, "prefill")
    assert "attention_config.minimax_m3_msa_decode_backend" not in POLICY.effective(
        flags, "prefill"
    )


def test_context_rule_added_by_override(tmp_path: Path) -> None:
    policy = load_policy(
        write(
            tmp_path,
            '[context.mine]\nkeys = "block_size"\nroles = ["decode"]\nbasis = "because"\n',
        )
    )
    flags = normalise_argv(["serve", "M", "--block-size", "128"]).flags
    assert policy.effective(flags, "decode") == FlagSet()
    assert policy.effective(flags, "prefill") == FlagSet({"block_size": "128"})
    rule = next(r for r in policy.context.rules if r.id == "mine")
    assert rule.origin == "provenance.toml" and rule.basis == "because"


def test_alias_added_and_dropped_by_override(tmp_path: Path) -> None:
    policy = load_policy(
        write(
            tmp_path,
            '[aliases]\n"attention_config.backend" = []\n'
            '"attention_config.use_trtllm_attention" = ["env:VLLM_USE_TRTLLM_ATTENTION"]\n',
        )
    )
    shorthand = normalise_argv(["serve", "M", "--attention-backend", "X"]).flags
    assert policy.effective(shorthand, None) == FlagSet({"attention_backend": "X"})
    env = normalise_argv(["serve", "M"], {"VLLM_USE_TRTLLM_ATTENTION": "true"}).flags
    assert policy.effective(env, None) == FlagSet({"attention_config.use_trtllm_attention": "true"})


def test_pyproject_sections(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.provenance.context.encoder-without-encoder]\nenabled = false\n", encoding="utf-8"
    )
    policy = load_policy(tmp_path)
    flags = normalise_argv(["serve", "M", *ENCODER, "--language-model-only"]).flags
    assert "mm_encoder_tp_mode" in policy.effective(flags, "serve")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[context.x]\nkeys = "a"\n', "context.x"),
        ('[context.x]\nkeys = "a"\nroles = ["prefill"]\nfoo = 1\n', "context.x.foo"),
        ('[context.x]\nkeys = "Not A Key"\nroles = ["prefill"]\n', "context.x.keys"),
        ('[context.decode-kernel-on-prefill]\nenabled = "no"\n', "enabled"),
        ('[aliases]\n"a" = "b"\n', "aliases.a"),
        ('[aliases]\n"a.*" = ["b"]\n', "aliases.a.*"),
    ],
)
def test_bad_overrides_name_file_and_key(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(InputError) as info:
        load_policy(write(tmp_path, text))
    assert "provenance.toml" in str(info.value.diagnostic()) and where in info.value.diagnostic()


# --- real MiniMax-M3 commands -----------------------------------------------------------


@pytest.fixture(scope="module")
def minimax() -> tuple[object, object]:
    from provenance.recipes.load.loader import load_recipe, load_recipes_root

    root = load_recipes_root(REPO / "recipes")
    return load_recipe(root, "MiniMaxAI/MiniMax-M3"), root


def _render(minimax: tuple[object, object], **selection: object) -> dict[str, FlagSet]:
    from pydantic import TypeAdapter

    from provenance.model.combination import Selection
    from provenance.recipes.render.synthesis import render

    recipe, root = minimax
    chosen = TypeAdapter(Selection).validate_python({"node_count": 1, **selection})
    result = render(recipe, root, chosen)  # type: ignore[arg-type]
    return {
        command.role: POLICY.effective(
            normalise_argv(list(command.argv or ()), command.env).flags, command.role
        )
        for command in result.roles
    }


PD = {"prefill": {"nodes": 1, "parallelism": "tp"}, "decode": {"nodes": 1, "parallelism": "tp"}}


def test_real_nvfp4_b300_pd_prefill_has_no_decode_kernel(minimax: tuple[object, object]) -> None:
    roles = _render(minimax, variant="nvfp4", hardware="b300", strategy="pd_cluster", pd=PD)
    assert "attention_config.minimax_m3_msa_decode_backend" not in roles["prefill"]
    assert roles["decode"]["attention_config.minimax_m3_msa_decode_backend"] == "cutlass"


def test_real_mxfp4_mi355x_text_only_drops_the_encoder(minimax: tuple[object, object]) -> None:
    common = {"variant": "mxfp4", "hardware": "mi355x", "strategy": "single_node_tp"}
    plain = _render(minimax, **common)["serve"]
    text_only = _render(minimax, **common, features=["text_only"])["serve"]
    assert plain["mm_encoder_tp_mode"] == "data"
    assert "mm_encoder_tp_mode" not in text_only and "mm_encoder_attn_backend" not in text_only


def test_real_nvfp4_b300_single_node_renders_tp1(minimax: tuple[object, object]) -> None:
    """The builder's TP auto-fit renders ``--tensor-parallel-size 1`` on B300 (spec §6)."""
    from provenance.model.combination import Selection
    from provenance.recipes.render.synthesis import render

    recipe, root = minimax
    selection = Selection(variant="nvfp4", hardware="b300", strategy="single_node_tp", node_count=1)
    argv = render(recipe, root, selection).roles[0].argv  # type: ignore[arg-type]
    assert argv is not None and argv[-2:] == ("--tensor-parallel-size", "1")
    fields = dataclasses.asdict(selection)
    assert "tensor_parallel_size" not in _render(minimax, **fields)["serve"]


def test_real_b200_disaggregated_decode_env_spelling_is_aliased() -> None:
    """InferenceX #2462's B200 decode workers set the MSA backend as an env variable."""
    from provenance.store.evidence import EvidenceStore

    seen = 0
    for record in EvidenceStore(REPO / "evidence").iter_records():
        decode = record.roles.get("decode")
        if decode is None or "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND" not in decode:
            continue
        seen += 1
        flags = POLICY.effective(decode, "decode")
        assert "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND" not in flags
        assert flags["attention_config.minimax_m3_msa_decode_backend"] == "cutlass"
    assert seen >= 5


# --- properties -----------------------------------------------------------------------------

KEYS = st.sampled_from(
    [
        "mm_encoder_tp_mode",
        "mm_encoder_attn_backend",
        "language_model_only",
        "attention_config.minimax_m3_msa_decode_backend",
        "env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND",
        "attention_backend",
        "attention_config.backend",
        "block_size",
        "kv_cache_dtype",
    ]
)
VALUES = st.sampled_from(["true", "false", "cutlass", "data", "FLASHINFER", "fp8", "128"])
FLAGSETS = st.dictionaries(KEYS, VALUES, max_size=8).map(FlagSet)
ROLES = st.sampled_from([None, "serve", "prefill", "decode"])


@given(FLAGSETS, ROLES)
def test_context_only_removes_keys(flags: FlagSet, role: str | None) -> None:
    aliased = POLICY.aliases.apply(flags)
    result = POLICY.in_context(flags, role)
    assert result.item_set() <= aliased.item_set()


@given(FLAGSETS, ROLES)
def test_context_is_idempotent(flags: FlagSet, role: str | None) -> None:
    once = POLICY.in_context(flags, role)
    assert POLICY.in_context(once, role) == once


@given(FLAGSETS, ROLES, st.sampled_from(DEFAULT_ALIASES), VALUES)
def test_every_spelling_gives_one_result(
    flags: FlagSet, role: str | None, alias: object, value: str
) -> None:
    from provenance.normalise.aliases import AliasRule

    assert isinstance(alias, AliasRule)
    names = (alias.canonical, *alias.spellings)
    base = flags.without(names)
    results = {POLICY.in_context(base.merged({name: value}), role) for name in names}
    assert len(results) == 1


@given(FLAGSETS, ROLES)
def test_context_never_depends_on_inert_keys(flags: FlagSet, role: str | None) -> None:
    """Dropping a key a rule makes inert never changes what else is inert."""
    result = POLICY.in_context(flags, role)
    aliased = POLICY.aliases.apply(flags)
    inert = [k for k in aliased if k not in result]
    assert POLICY.in_context(aliased.without(inert), role) == result


def test_custom_policy_without_context_keeps_everything() -> None:
    policy = Policy(context=(), aliases=())
    flags = normalise_argv(["serve", "M", *ENCODER, "--language-model-only"]).flags
    assert policy.effective(flags, "serve") == policy.major(flags)
