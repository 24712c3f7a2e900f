"""Text, JSON, markdown and SARIF audit reports: content, escaping, SARIF schema validity."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from audit_builders import (
    StandInNormaliser,
    entry,
    graph_of,
    pd_combo,
    pd_record,
    single_combo,
    single_record,
)
from pydantic import ValidationError

from provenance.audit.pipeline import RecipeInput, audit
from provenance.audit.verdicts import RECORD_INDEX, AuditReport
from provenance.model.ledger import Declaration, Declarations, SelectionPattern
from provenance.report import json_report, markdown, sarif, text
from provenance.report.formats import write_report

SCHEMA = Path(__file__).resolve().parent.parent / "data" / "sarif-schema-2.1.0.json"

RECIPE_YAML = """\
meta:
  hardware:
    b200: verified
model:
  model_id: "nvidia/MiniMax-M3-NVFP4"
  base_args:
    - "--block-size"
    - "128"
variants:
  nvfp4:
    extra_args:
      - "--kv-cache-dtype"
      - "fp8"
      - "--attention_config.indexer_kv_dtype"
      - "fp8"
    extra_env:
      VLLM_FLOAT32_MATMUL_PRECISION: "high"
strategy_overrides:
  pd_cluster:
    hardware_overrides:
      blackwell:
        extra_args:
          - "--attention_config.indexer_kv_dtype"
          - "fp8"
features:
  spec_decoding:
    modes:
      eagle3_gqa:
        args:
          - "--speculative-config"
          - '{"method": "eagle3", "num_speculative_tokens": 3}'
"""
HOSTILE = "x\x1b[31m|`@alice <b>*bold*</b>\nnext"


def make_report(tmp_path: Path, *, hostile: bool = False, declared: bool = False) -> AuditReport:
    recipe_file = tmp_path / "MiniMax-M3.yaml"
    recipe_file.write_text(RECIPE_YAML)
    normaliser = StandInNormaliser()
    single = single_record(
        "fp4-b200-vllm" if not hostile else HOSTILE,
        "block_size=128 kv_cache_dtype=fp8 tensor_parallel_size=8",
    )
    pd = pd_record(
        "fp4-b300-dynamo-vllm-mtp",
        "tensor_parallel_size=8 attention_config.indexer_kv_dtype=fp8 "
        "speculative_config.method=eagle3 speculative_config.num_speculative_tokens=1",
        "tensor_parallel_size=8 attention_config.indexer_kv_dtype=fp8 "
        "speculative_config.method=eagle3 speculative_config.num_speculative_tokens=3",
    )
    spec = '{"method":"eagle3","num_speculative_tokens":3}'
    combos = [
        single_combo("--block-size 128 --kv-cache-dtype fp8 --tensor-parallel-size 8"),
        single_combo(
            "--block-size 128 --kv-cache-dtype fp8 --attention_config.indexer_kv_dtype fp8 "
            "--tensor-parallel-size 8",
            variant="nvfp4" if not hostile else HOSTILE,
        ),
        pd_combo(
            f"--tensor-parallel-size 8 --attention_config.indexer_kv_dtype fp8 "
            f"--speculative-config {spec}",
            f"--tensor-parallel-size 8 --attention_config.indexer_kv_dtype fp8 "
            f"--speculative-config {spec}",
            features=("spec_decoding",),
            feature_modes={"spec_decoding": "eagle3_gqa"},
        ),
    ]
    declarations = Declarations(
        declarations=(
            Declaration(
                id="pd-k3",
                match=SelectionPattern(strategy="pd_cluster"),
                reason="K=3 on prefill is a documented recipe choice",
                date="2026-08-01",
            ),
        )
        if declared
        else ()
    )
    graph = graph_of([single, pd], [entry(2120, single), entry(2314, pd)], normaliser)
    recipe = RecipeInput(
        ref="MiniMaxAI/MiniMax-M3",
        combinations=combos,
        path=str(recipe_file),
        verified_hardware=("b200", "b300"),
    )
    return audit([recipe], graph, normaliser, declarations, ledger="ledger")


def render(report: AuditReport, fmt: str) -> str:
    out = io.StringIO()
    write_report(report, fmt, out)
    return out.getvalue()


def test_json_stream_equals_model_dump(tmp_path: Path) -> None:
    report = make_report(tmp_path)
    out = io.StringIO()
    json_report.write(report, out)
    context = {RECORD_INDEX: report.record_index()}
    assert out.getvalue() == report.model_dump_json(by_alias=True, context=context) + "\n"
    streamed = json.loads(out.getvalue())
    assert streamed["schema"] == "provenance.audit/v3"
    # flags cite records by index into the records table
    records = [r["record"] for r in streamed["records"]]
    cited = [
        records[i]
        for entry in streamed["verdicts"]
        for role in entry["roles"]
        for flag in role["flags"]
        for i in flag["evidence"]
    ]
    assert cited and set(cited) == {r.record for r in report.records}
    # the JSON reads back into the same report (indexes resolved through records),
    # and so does the form without indexes
    assert AuditReport.model_validate_json(out.getvalue()) == report
    again = AuditReport.model_validate_json(report.model_dump_json(by_alias=True))
    assert again == report
    # an index outside the table is refused
    broken = json.loads(out.getvalue())
    broken["verdicts"][0]["roles"][0]["flags"][0]["evidence"] = [len(records)]
    with pytest.raises(ValidationError):
        AuditReport.model_validate(broken)


def test_text_report_groups_and_counts(tmp_path: Path) -> None:
    report = make_report(tmp_path)
    out = io.StringIO()
    text.write(report, out, width=300)
    output = out.getvalue()
    assert "3 combinations: 1 recommended, 2 guide-only" in output
    assert "single_node_tp" in output and "pd_cluster" in output
    assert (
        "value-mismatch prefill speculative_config.num_speculative_tokens=3 (evidence 1)" in output
    )
    assert "b300: verified" in output  # claim
    assert "\x1b" not in output


def test_text_report_escapes_control_characters(tmp_path: Path) -> None:
    output = render(make_report(tmp_path, hostile=True), "text")
    assert "\x1b" not in output
    assert "\\x1b[31m" in output


def test_markdown_escapes_every_value(tmp_path: Path) -> None:
    output = render(make_report(tmp_path, hostile=True), "markdown")
    assert "\x1b" not in output
    assert "\nnext" not in output
    # outside code spans (where markdown and HTML are inert) every value is escaped
    prose = re.sub(r"(`+)[^`].*?\1", "", output)
    assert "<b>" not in prose
    assert "&lt;b&gt;" in prose
    assert "@alice" not in prose
    assert "\\*bold\\*" in prose
    assert markdown.cell("a|b") == "a\\|b"
    # the pipe in the hostile variant does not open a new table column
    unescaped_pipe = re.compile(r"(?<!\\)\|")
    lines = output.splitlines()
    columns = 0
    hostile_rows = 0
    for index, line in enumerate(lines):
        if index + 1 < len(lines) and lines[index + 1].startswith("|--"):
            columns = len(unescaped_pipe.findall(line))
        if "alice" in line:
            hostile_rows += 1
            assert len(unescaped_pipe.findall(line)) == columns, line
    assert hostile_rows == 2


def test_markdown_links_prs_and_counts(tmp_path: Path) -> None:
    output = render(make_report(tmp_path), "markdown")
    assert "**3** combinations" in output
    assert "(https://github.com/SemiAnalysisAI/InferenceX/pull/2314)" in output


def _validate_sarif(document: dict[str, object]) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(document)


def test_sarif_is_valid_and_points_at_the_introducing_line(tmp_path: Path) -> None:
    report = make_report(tmp_path)
    document = json.loads(render(report, "sarif"))
    _validate_sarif(document)
    run = document["runs"][0]
    results = run["results"]
    assert {r["ruleId"] for r in results} >= {"flag-unevidenced", "value-mismatch"}
    by_flag = {(r["ruleId"], r["properties"]["flag"]): r for r in results}
    indexer = by_flag[("flag-unevidenced", "attention_config.indexer_kv_dtype")]
    region = indexer["locations"][0]["physicalLocation"]["region"]
    lines = RECIPE_YAML.splitlines()
    assert "--attention_config.indexer_kv_dtype" in lines[region["startLine"] - 1]
    # the single-node combination picks the variant layer, not the pd_cluster override
    assert region["startLine"] < RECIPE_YAML.index("strategy_overrides")
    spec = by_flag[("value-mismatch", "speculative_config.num_speculative_tokens")]
    spec_line = spec["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert "--speculative-config" in lines[spec_line - 1]
    assert "SemiAnalysisAI/InferenceX#2314" in spec["message"]["text"]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert rules["value-mismatch"]["helpUri"].endswith("#value-mismatch")
    assert all("suppressions" not in r for r in results)


def test_sarif_suppresses_declared_results(tmp_path: Path) -> None:
    document = sarif.build(make_report(tmp_path, declared=True))
    _validate_sarif(document)
    pd_results = [
        r
        for r in document["runs"][0]["results"]
        if r["properties"]["role"] in ("prefill", "decode")
    ]
    assert pd_results
    for result in pd_results:
        assert result["suppressions"][0]["kind"] == "external"
        assert "pd-k3" in result["suppressions"][0]["justification"]


def test_sarif_without_recipe_file_still_valid(tmp_path: Path) -> None:
    report = make_report(tmp_path).model_copy(update={"recipe_files": {}})
    _validate_sarif(sarif.build(report))


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    from provenance.errors import UsageError

    with pytest.raises(UsageError):
        render(make_report(tmp_path), "yaml")
    assert text.MAX_REVERSE_ROWS > 0


def test_flag_locator_prefers_the_layer_emitted_last(tmp_path: Path) -> None:
    from provenance.model.combination import Selection
    from provenance.safe_yaml import load_yaml_text

    locator = sarif.FlagLocator(load_yaml_text(RECIPE_YAML, "recipe.yaml"))
    lines = RECIPE_YAML.splitlines()

    def line_text(line: int) -> str:
        return lines[line - 1].strip()

    single = Selection(variant="nvfp4", hardware="b200", strategy="single_node_tp", node_count=1)
    pd = Selection(variant="nvfp4", hardware="b300", strategy="pd_cluster", node_count=None)
    env_line = locator.line_for("env:VLLM_FLOAT32_MATMUL_PRECISION", "high", single, "serve")
    assert line_text(env_line).startswith("VLLM_FLOAT32_MATMUL_PRECISION:")
    base_line = locator.line_for("block_size", "128", single, "serve")
    assert line_text(base_line) == '- "--block-size"'
    variant_line = locator.line_for("attention_config.indexer_kv_dtype", "fp8", single, "serve")
    override_line = locator.line_for("attention_config.indexer_kv_dtype", "fp8", pd, "prefill")
    assert variant_line < RECIPE_YAML.count("\n", 0, RECIPE_YAML.index("strategy_overrides"))
    assert override_line > variant_line
    assert line_text(override_line) == '- "--attention_config.indexer_kv_dtype"'
    missing = locator.line_for(None, None, single, "serve")
    assert line_text(missing) == "nvfp4:"


def test_json_report_validates_against_the_published_schema(tmp_path: Path) -> None:
    from provenance.schemas import generate

    out = io.StringIO()
    json_report.write(make_report(tmp_path, declared=True), out)
    schema = generate("audit")
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads(out.getvalue()))


def test_markdown_cuts_say_what_they_left_out_and_all_lifts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = make_report(tmp_path)
    monkeypatch.setattr(markdown, "ACTIONABLE_BUDGET", 10)
    monkeypatch.setattr(markdown, "MAX_CLAIMS", 0)
    output = render(report, "markdown")
    assert "_2 more actionable groups not shown; all of them: `provenance audit --all" in output
    assert "_1 more claims, backed groups or unclassified names not shown" in output
    out = io.StringIO()
    write_report(report, "markdown", out, show_all=True)
    assert "not shown" not in out.getvalue()
    assert out.getvalue().count("| nvfp4 |") == 2
