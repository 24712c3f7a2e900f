from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inferencex_fixtures import MASTER_DISAGG, RepoBuilder

from provenance.errors import InputError
from provenance.evidence.inferencex import master
from provenance.evidence.inferencex.master import (
    expand_concurrency,
    hardware_of_runner,
    load_master_configs,
    narrow_text,
)
from provenance.evidence.inferencex.snapshot import Snapshot, open_repo, resolve_commit
from provenance.safe_yaml import load_yaml_text

SINGLE = """\
toy-fp4-b300-vllm:
  image: vllm/vllm-openai:nightly-1
  model: org/Toy-NVFP4
  model-prefix: toy
  runner: b300
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 2, conc-list: [1, 4] }
      - { tp: 4, ep: 4, dp-attn: true, conc-start: 4, conc-end: 20, spec-decoding: mtp }
other-fp8-h100-sglang:
  image: lmsysorg/sglang:1
  model: org/Other
  model-prefix: other
  runner: h100
  precision: fp8
  framework: sglang
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.5
      search-space:
      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: x }, conc-list: [2] }
      - { tp: 8, kv-offloading: dram, kv-offload-backend: y, conc-list: [2] }
"""

LEGACY = """\
old-fp8-h200-sglang:
  image: img
  model: org/Old
  model-prefix: old
  runner: h200
  precision: fp8
  framework: sglang
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - { tp: 8, conc-start: 4, conc-end: 16 }
"""


def _snapshot(builder: RepoBuilder, rev: str = "HEAD") -> Snapshot:
    repo = open_repo(builder.root)
    return Snapshot(repo, resolve_commit(repo, rev))


def test_expand_concurrency_doubles_and_clamps_inclusive() -> None:
    assert expand_concurrency(4, 64) == [4, 8, 16, 32, 64]
    assert expand_concurrency(4, 20) == [4, 8, 16, 20]
    assert expand_concurrency(1, 1) == [1]
    assert expand_concurrency(8, 4) == []


@settings(deadline=None)
@given(st.integers(1, 512), st.integers(1, 4096))
def test_expand_concurrency_properties(start: int, end: int) -> None:
    values = expand_concurrency(start, end)
    if start > end:
        assert values == []
        return
    assert values[0] == start
    assert values[-1] == end
    assert values == sorted(set(values))
    assert all(b == min(a * 2, end) for a, b in itertools.pairwise(values))


def test_hardware_of_runner() -> None:
    assert hardware_of_runner("b300") == ("b300", True)
    assert hardware_of_runner("b200-dgxc") == ("b200", True)
    assert hardware_of_runner("cluster:gb300-nv") == ("gb300", True)
    assert hardware_of_runner("mi355x-disagg") == ("mi355x", True)
    assert hardware_of_runner("rtx6000pro-lat") == ("rtx6000pro-lat", False)


def test_master_points_expand_per_concurrency(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    builder.commit("add (#1)", {"configs/nvidia-master.yaml": SINGLE})
    masters = load_master_configs(_snapshot(builder))
    assert masters.keys() == ["other-fp8-h100-sglang", "toy-fp4-b300-vllm"]
    toy = masters.by_key("toy-fp4-b300-vllm")[0]
    assert toy.hardware == "b300" and toy.blob_sha == masters.files["configs/nvidia-master.yaml"]
    points = [(p.tp, p.ep, p.dp_attn, p.conc, p.spec_decoding) for p in toy.single_points]
    assert points == [
        (2, 1, False, 1, "none"),
        (2, 1, False, 4, "none"),
        (4, 4, True, 4, "mtp"),
        (4, 4, True, 8, "mtp"),
        (4, 4, True, 16, "mtp"),
        (4, 4, True, 20, "mtp"),
    ]
    assert toy.single_points[0].max_model_len == 9472
    agentic = masters.by_key("other-fp8-h100-sglang")[0].single_points[0]
    assert agentic.scenario == "agentic-coding"
    assert agentic.kv_offload_backend == "x" and agentic.max_model_len == 0
    older = masters.by_key("other-fp8-h100-sglang")[0].single_points[1]
    assert older.kv_offload_backend == "y"


def test_disagg_points_keep_concurrency_list_and_config_file(
    make_repo: Callable[[], RepoBuilder],
) -> None:
    builder = make_repo()
    builder.commit("add (#1)", {"configs/nvidia-master.yaml": MASTER_DISAGG})
    entry = load_master_configs(_snapshot(builder)).entries[0]
    point = entry.multi_points[0]
    assert point.concs == (64, 4096)
    assert point.config_file() == "recipes/vllm/toy/4p1d.yaml"
    assert point.prefill is not None and point.prefill.num_worker == 4
    assert point.decode is not None and point.decode.label() == {
        "num_worker": 1,
        "tp": 4,
        "ep": 4,
        "dp_attn": False,
    }


def test_all_locations_are_read(make_repo: Callable[[], RepoBuilder]) -> None:
    builder = make_repo()
    old = builder.commit("legacy (#1)", {".github/configs/nvidia-master.yaml": LEGACY})
    builder.commit(
        "archive (#2)",
        {
            "configs/nvidia-master.yaml": SINGLE,
            "configs/deprecated/nvidia-old-master.yaml": LEGACY,
            ".github/configs/nvidia-master.yaml": None,
        },
    )
    at_old = load_master_configs(_snapshot(builder, old))
    assert at_old.keys() == ["old-fp8-h200-sglang"]
    assert [p.conc for p in at_old.entries[0].single_points] == [4, 8, 16]
    now = load_master_configs(_snapshot(builder))
    archived = now.by_key("old-fp8-h200-sglang")[0]
    assert archived.archived and archived.path == "configs/deprecated/nvidia-old-master.yaml"


def test_filter_and_bad_entry_is_a_warning(make_repo: Callable[[], RepoBuilder]) -> None:
    bad = SINGLE + "broken-key:\n  image: x\n  model: y\n  runner: b300\n"
    builder = make_repo()
    builder.commit("add (#1)", {"configs/amd-master.yaml": bad})
    masters = load_master_configs(
        _snapshot(builder), wanted=lambda key, raw: raw.get("model-prefix") != "other"
    )
    assert masters.keys() == ["toy-fp4-b300-vllm"]
    assert any("broken-key" in w and "amd-master.yaml" in w for w in masters.warnings)


def test_parse_entry_names_file_and_line() -> None:
    from provenance.evidence.inferencex.master import parse_entry

    text = SINGLE.replace("conc-list: [1, 4]", "conc-list: [1, x]")
    loaded = load_yaml_text(text, "configs/nvidia-master.yaml")
    with pytest.raises(InputError) as info:
        parse_entry("toy-fp4-b300-vllm", loaded, "0" * 40)
    assert "configs/nvidia-master.yaml:14" in str(info.value)


def test_text_prefilter_keeps_lines_and_entries(make_repo: Callable[[], RepoBuilder]) -> None:
    text = "# header\n" + SINGLE + "\n" + LEGACY
    narrowed = narrow_text(text, lambda key, prefix: prefix == "toy")
    assert narrowed is not None and narrowed.count("\n") == text.count("\n")
    assert "other-fp8-h100-sglang" not in narrowed and "old-fp8-h200-sglang" not in narrowed
    assert narrow_text(text, lambda key, prefix: True) is None
    builder = make_repo()
    builder.commit("add (#1)", {"configs/nvidia-master.yaml": text})
    snap = _snapshot(builder)

    def wanted(key: str, raw: dict[str, object]) -> bool:
        return raw.get("model-prefix") == "toy"

    full = load_master_configs(snap, wanted=wanted)
    fast = load_master_configs(snap, wanted=wanted, prefilter=lambda k, p: p in (None, "toy"))
    assert fast.entries == full.entries and len(fast.entries) == 1
    none = load_master_configs(snap, wanted=wanted, prefilter=lambda k, p: False)
    assert none.entries == () and none.warnings == ()


def test_text_prefilter_blanks_an_entry_through_a_column_zero_comment() -> None:
    """A comment in column 0 inside a rejected entry does not end it (InferenceX's
    nvidia-master.yaml has such comments between search-space items): the indented
    rest of the entry is blanked too, so it cannot attach to the kept entry before."""
    rejected = LEGACY.replace("    search-space:\n", "    search-space:\n# P: 1xTP1 D:4xTP2\n")
    text = SINGLE + rejected
    narrowed = narrow_text(text, lambda key, prefix: prefix == "toy")
    assert narrowed is not None and "conc-end: 16" not in narrowed
    full = load_yaml_text(text, "m.yaml").data
    assert load_yaml_text(narrowed, "m.yaml").data == {
        "toy-fp4-b300-vllm": full["toy-fp4-b300-vllm"]
    }


_ENTRY_LINES = st.lists(
    st.sampled_from(["  - x", "  - {c: 2}", "", "# note", "#", "  # indented"]),
    max_size=6,
)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.booleans(), _ENTRY_LINES), min_size=1, max_size=5))
def test_text_prefilter_keeps_kept_entries_exactly(entries: list[tuple[bool, list[str]]]) -> None:
    """Property: the narrowed text parses to the full text's kept entries, nothing else."""
    lines: list[str] = []
    kept: set[str] = set()
    for number, (keep, body) in enumerate(entries):
        key = f"k{number}"
        lines.append(f"{key}:")
        lines.extend(["  b:", *body])
        if keep:
            kept.add(key)
    text = "\n".join(lines) + "\n"
    narrowed = narrow_text(text, lambda key, _prefix: key in kept)
    full = load_yaml_text(text, "m.yaml").data
    got = full if narrowed is None else load_yaml_text(narrowed, "m.yaml").data or {}
    assert {k: v for k, v in got.items() if k in kept} == {k: full[k] for k in kept}
    assert set(got) == kept or narrowed is None


def test_legacy_archive_directory_is_read(make_repo: Callable[[], RepoBuilder]) -> None:
    """Before InferenceX#1992, archived masters lived in ``.github/configs/deprecated``."""
    builder = make_repo()
    builder.commit(
        "archive (#1)",
        {
            ".github/configs/nvidia-master.yaml": SINGLE,
            ".github/configs/deprecated/nvidia-old-master.yaml": LEGACY,
        },
    )
    masters = load_master_configs(_snapshot(builder))
    archived = masters.by_key("old-fp8-h200-sglang")[0]
    assert archived.archived
    assert archived.path == ".github/configs/deprecated/nvidia-old-master.yaml"
    assert master.is_master_path(archived.path) and not master.is_master_path("configs/x.yaml")


def test_reused_file_results_equal_a_fresh_read(
    make_repo: Callable[[], RepoBuilder], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reuse`` parses each (path, blob) once across commits; the result is a fresh read's."""
    builder = make_repo()
    builder.commit("add (#1)", {"configs/nvidia-master.yaml": SINGLE})
    builder.commit("disagg (#2)", {"configs/amd-master.yaml": MASTER_DISAGG + "broken: [1\n"})
    builder.commit("fix (#3)", {"configs/amd-master.yaml": MASTER_DISAGG})
    parsed: list[str] = []
    real = master.file_entries

    def counting(raw: bytes, path: str, *args: Any) -> Any:
        parsed.append(path)
        return real(raw, path, *args)

    monkeypatch.setattr(master, "file_entries", counting)
    reuse: master.FileResults = {}
    for rev in ("HEAD~2", "HEAD", "HEAD~2"):
        fresh = load_master_configs(_snapshot(builder, rev))
        assert load_master_configs(_snapshot(builder, rev), reuse=reuse) == fresh
    with pytest.raises(InputError):  # a file that is not YAML is never kept
        load_master_configs(_snapshot(builder, "HEAD~1"), reuse=reuse)
    parsed.clear()
    with pytest.raises(InputError):
        load_master_configs(_snapshot(builder, "HEAD~1"), reuse=reuse)
    # the nvidia file's blob was kept from the other commits; the broken one is read again
    assert parsed == ["configs/amd-master.yaml"]


def test_recent_files_keep_the_most_recently_used() -> None:
    recent = master.RecentFiles(kept=2)
    one: master.FileResult = ((), ("one",))
    recent[("a", "1")] = one
    recent[("b", "2")] = ((), ())
    assert recent.get(("a", "1")) == one  # now the most recent
    recent[("c", "3")] = ((), ())
    assert list(recent) == [("a", "1"), ("c", "3")]
    assert recent.get(("b", "2")) is None
