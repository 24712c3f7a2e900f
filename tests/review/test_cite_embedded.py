"""`provenance cite` on the embedded MiniMax-M3 recipe and ledger names the reviewers' PRs."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from provenance.cli.main import cli

ARGS = ["cite", "--variant", "nvfp4", "--hardware", "b200,b300", "--strategy"]
STRATEGIES = "single_node_tp,pd_cluster"


@pytest.fixture(scope="module")
def block() -> str:
    result = CliRunner().invoke(cli, [*ARGS, STRATEGIES, "--pd-nodes", "1", "--lang", "en,zh"])
    assert result.exit_code == 0, result.output
    return result.output


def _section(text: str, pr: int) -> str:
    """The bullet of one evidence PR and its sub-bullets, in the first language block."""
    start = text.index(f"[InferenceX\\#{pr}]")
    end = text.find("\n- ", start)
    return text[start:end]


def _backs(section: str, flag: str, scope: str) -> bool:
    return any(
        line.lstrip().startswith("- backs ") and f"`{flag}`" in line and scope in line
        for line in section.splitlines()
    )


def test_2120_backs_the_fp8_indexer_on_single_node_b200_b300_with_its_sweep(block: str) -> None:
    section = _section(block, 2120)
    assert _backs(
        section,
        "attention_config.indexer_kv_dtype=fp8",
        "variants `nvfp4` · on `b200`, `b300` · roles `serve`",
    )
    assert "run [`29984401390`]" in section and "attempt 1" in section
    assert "head `0b896e92f975d0ef8e374fdc284b06444fc95242`, `success`" in section
    assert "GSM8K 0.948–0.958" in section


def test_2310_backs_the_pd_cluster_attention_flags_on_both_roles(block: str) -> None:
    section = _section(block, 2310)
    for flag in (
        "attention_config.backend=FLASHINFER",
        "attention_config.use_trtllm_attention=true",
        "attention_config.indexer_kv_dtype=fp8",
    ):
        assert _backs(section, flag, "on `b300` · roles `decode`, `prefill`"), flag
    assert "run [`30018717056`]" in section


def test_2314_is_cited_and_the_prefill_token_mismatch_is_listed(block: str) -> None:
    section = _section(block, 2314)
    assert "no sweep run recorded in the ledger" in section
    assert (
        "`value-mismatch` value differs from the evidence: `prefill`, "
        "`speculative_config.num_speculative_tokens`, recipe `3`, evidence `1`"
    ) in block
    mismatches = [line for line in block.splitlines() if "recipe `3`, evidence `1`" in line]
    # b300 is backed by #2314 (and its predecessor/successors); b200 by #2462.
    assert any("InferenceX\\#2314" in line for line in mismatches)


def test_chinese_block_has_the_same_facts(block: str) -> None:
    zh = block[block.index("### 本配方的基准证据") :]
    assert "`attention_config.indexer_kv_dtype=fp8`" in zh and "支持 " in zh
    assert "基准扫描: 运行 [`29984401390`]" in zh
    assert "取值与证据不一致：`prefill`, `speculative_config.num_speculative_tokens`" in zh
    assert "配方 `3`, 证据 `1`" in zh
    for pr in (2120, 2310, 2314):
        assert f"[InferenceX\\#{pr}]" in zh


def test_the_whole_recipe_block_fits_a_pull_request_body() -> None:
    result = CliRunner().invoke(cli, ["cite", "--lang", "en,zh"])
    assert result.exit_code == 0, result.output
    # GitHub refuses PR bodies over 65,536 characters.
    assert len(result.output) < 65_536
    for pr in (2120, 2310, 2314):
        assert result.output.count(f"[InferenceX\\#{pr}]") == 2, pr  # en and zh
