"""Skip reason codes: messages, legacy summaries, and the documentation of every code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.evidence.inferencex.skips import (
    SKIP_CODES,
    SKIP_MESSAGES,
    legacy_code,
    skip_message,
)
from provenance.evidence.inferencex.summary import IngestSummary

DOC = Path(__file__).parents[3] / "docs" / "evidence.md"


def test_every_code_has_a_message_and_only_those() -> None:
    assert set(SKIP_MESSAGES) == set(SKIP_CODES)


def test_docs_list_every_skip_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Skip reasons", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE))
    assert documented == set(SKIP_CODES)


@given(st.sampled_from(SKIP_CODES), st.from_regex(r"[a-z0-9-]{0,20}", fullmatch=True))
def test_old_messages_map_back_to_their_code(code: str, framework: str) -> None:
    message = skip_message(code, framework)  # type: ignore[arg-type]
    found, found_framework = legacy_code(message)
    assert found == code
    if "{framework}" in SKIP_MESSAGES[found]:
        assert found_framework == framework


def test_a_summary_written_before_codes_still_loads() -> None:
    old = {
        "skipped": {
            "launcher script not found": 3,
            "multinode point without CONFIG_FILE (framework vllm-disagg)": 10,
        }
    }
    summary = IngestSummary.model_validate(old)
    assert summary.skip_counts() == {"launcher-not-found": 3, "multinode-without-config-file": 10}
    assert {item.framework for item in summary.skipped} == {"", "vllm-disagg"}


def test_an_unknown_old_message_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown skip reason"):
        IngestSummary.model_validate({"skipped": {"it rained": 1}})


def test_summary_round_trips_through_json_and_recomputes_messages() -> None:
    summary = IngestSummary()
    summary.skip("no-vllm-engine", "sglang", ["b-key", "a-key"], 2)
    summary.skip("no-vllm-engine", "sglang", ["c-key"])
    dumped = summary.model_dump(mode="json")
    dumped["skipped"][0]["message"] = "forged"
    again = IngestSummary.model_validate(dumped)
    (item,) = again.skipped
    assert (item.count, item.keys) == (3, ["a-key", "b-key", "c-key"])
    assert item.message == "launcher serves no vLLM engine (framework sglang)"


def test_an_earlier_message_of_a_code_still_maps_to_it() -> None:
    old = "srt-slurm recipe not in the InferenceX tree (upstream srt-slurm recipe)"
    assert legacy_code(old) == ("recipe-not-in-tree", "")
