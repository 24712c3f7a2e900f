"""The InferenceX re-extractor verify uses: PR mode first, grouped calls, per-key fallback."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ledger_factories import COMMIT, make_record

from provenance.errors import InputError
from provenance.model.record import EvidenceRecord
from provenance.store.verify import inferencex_reextractor

REPO = Path("/nonexistent/inferencex")


def keyed(index: int, key: str) -> EvidenceRecord:
    return make_record(index).model_copy(update={"config_key": key}).with_id()


class FakeExtract:
    """Stands in for ``ingest.extract``: returns the records whose key matches the pattern."""

    def __init__(
        self, by_pr: dict[int | None, list[EvidenceRecord]], fail_on: str | None = None
    ) -> None:
        self.by_pr = by_pr
        self.fail_on = fail_on
        self.calls: list[tuple[str, str, tuple[int, ...]]] = []

    def __call__(
        self, repo: Path, rev: str, model_prefix: str | None, keys: str, prs: list[int]
    ) -> Any:
        assert repo == REPO and model_prefix is None
        self.calls.append((rev, keys, tuple(prs)))
        if keys == self.fail_on:
            raise InputError("cannot extract", path="configs/nvidia-master.yaml", line=1)
        pool = self.by_pr.get(prs[0] if prs else None, [])
        return SimpleNamespace(records=[r for r in pool if fnmatch.fnmatchcase(r.config_key, keys)])


def test_planned_keys_are_extracted_in_one_call_per_commit_pr_and_model() -> None:
    a = keyed(1, "minimaxm3-fp4-b200-vllm")
    b = keyed(2, "minimaxm3-fp4-b300-vllm-mtp")
    other = keyed(3, "dsr1-fp8-h200-sglang")
    fake = FakeExtract({2120: [a, b, other]})
    citing = {a.id: [2120], b.id: [2120], other.id: [2120]}
    reextract = inferencex_reextractor(REPO, fake, citing, [a, b, other])
    assert reextract(a) == a
    assert reextract(b) == b
    assert reextract(other) == other
    assert fake.calls == [
        (COMMIT, "minimaxm3-fp4-b*", (2120,)),
        (COMMIT, "dsr1-fp8-h200-sglang", (2120,)),
    ]


def test_pr_mode_first_then_plain() -> None:
    a = keyed(1, "minimaxm3-fp4-b200-vllm")
    fake = FakeExtract({2120: [], None: [a]})
    reextract = inferencex_reextractor(REPO, fake, {a.id: [2120]}, [a])
    assert reextract(a) == a
    assert [c[2] for c in fake.calls] == [(2120,), ()]


def test_failed_group_falls_back_to_one_call_per_key() -> None:
    a = keyed(1, "minimaxm3-fp4-b200-vllm")
    b = keyed(2, "minimaxm3-fp4-b300-vllm")
    fake = FakeExtract({None: [a, b]}, fail_on="minimaxm3-fp4-b*")
    reextract = inferencex_reextractor(REPO, fake, {}, [a, b])
    assert reextract(a) == a and reextract(b) == b
    assert [c[1] for c in fake.calls] == [
        "minimaxm3-fp4-b*",
        "minimaxm3-fp4-b200-vllm",
        "minimaxm3-fp4-b300-vllm",
    ]


def test_changed_record_returns_the_closest_and_missing_returns_none() -> None:
    a = keyed(1, "minimaxm3-fp4-b200-vllm")
    changed = a.model_copy(update={"image": "vllm/vllm-openai:other"}).with_id()
    unrelated = keyed(7, "minimaxm3-fp4-b200-vllm").model_copy(update={"hardware": "b300"})
    fake = FakeExtract({None: [unrelated.with_id(), changed]})
    reextract = inferencex_reextractor(REPO, fake)
    assert reextract(a) == changed
    assert inferencex_reextractor(REPO, FakeExtract({}))(a) is None


def test_glob_characters_in_keys_are_literal() -> None:
    odd = keyed(1, "model-[x]*?")
    decoy = keyed(2, "model-x")
    fake = FakeExtract({None: [decoy, odd]})
    assert inferencex_reextractor(REPO, fake)(odd) == odd
    assert fake.calls[0][1] == "model-[[]x][*][?]"
