"""The vLLM version a record's image ran, and the defaults that depend on it.

``image_version`` maps an evidence record's image tag to a covered vLLM version (an
upstream release tag, optionally a build variant and a digest pin); every other image is
unknown. ``version_defaults`` and ``defaults_at`` read the knowledge table per version;
``VersionDefaults`` drops a record's explicit defaults of its version (docs/flags.md,
"Defaults").
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.model.flags import FlagSet
from provenance.normalise.policy import Policy
from provenance.normalise.vllm_knowledge import versions
from provenance.normalise.vllm_policy import (
    ABSENT,
    COMPUTED,
    UNSET,
    VersionDefaults,
    default_at,
    defaults_at,
    describe_default,
    image_release,
    image_version,
    stable_defaults,
    unknown_version_note,
    version_defaults,
    versioned_values,
)

COVERED = versions()
NIGHTLY = "vllm/vllm-openai:nightly-04c2a8deac44fdb1ca3e2b5ec3e6bf16f3f6a914"


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("vllm/vllm-openai-rocm:v0.17.0", "0.17.0"),
        ("vllm/vllm-openai:v0.18.0", "0.18.0"),
        ("vllm/vllm-openai:v0.19.0-cu130", "0.19.0"),
        ("vllm/vllm-openai:v0.20.0-ubuntu2404", "0.20.0"),
        ("vllm/vllm-openai:v0.20.1@sha256:" + "9e" * 32, "0.20.1"),
        ("docker.io/vllm/vllm-openai:v0.22.0", "0.22.0"),
        (" vllm/vllm-openai:v0.22.0 ", "0.22.0"),
        # the embedded evidence's other images: unknown
        (NIGHTLY, None),
        ("vllm/vllm-openai:nightly-dev-x86_64-cu13.0.1-904e4ec", None),
        ("vllm/vllm-openai:minimax-m3", None),
        ("vllm/vllm-openai:vllm-x86_64-cu13-0.25.1-7a33ba9", None),
        ("rocm/7.0:rocm7.0_ubuntu_22.04_vllm_0.10.1_instinct_20250927_rc1", None),
        ("nvcr.io#nvidia/tensorrt-llm/release:gpt-oss-dev", None),
        ("TBD", None),
        ("vllm/vllm-openai:v0.18.0rc1", None),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai:v0.12.0", None),  # a release the table does not cover
        ("someone/vllm-openai:v0.18.0", None),
        (None, None),
    ],
)
def test_image_version_examples(image: str | None, version: str | None) -> None:
    assert image_version(image) == version


def test_an_uncovered_release_is_named_but_unknown() -> None:
    assert "0.12.0" not in COVERED
    assert image_release("vllm/vllm-openai:v0.12.0") == "0.12.0"
    assert image_version("vllm/vllm-openai:v0.12.0") is None


_REGISTRY = st.sampled_from(["", "docker.io/", "registry.example.com:5000/", "ghcr.io/"])
_REPO = st.sampled_from(["vllm/vllm-openai", "vllm/vllm-openai-rocm"])
_VARIANTS = st.lists(
    st.sampled_from(["cu130", "cu129", "ubuntu2404", "x86_64", "aarch64", "arm64"]), max_size=2
)
_DIGEST = st.one_of(
    st.just(""),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64).map("@sha256:".__add__),
)


@given(st.sampled_from(COVERED), _REGISTRY, _REPO, _VARIANTS, _DIGEST)
def test_every_release_image_of_a_covered_version_maps_to_it(
    version: str, registry: str, repo: str, variants: list[str], digest: str
) -> None:
    suffix = "".join(f"-{v}" for v in variants)
    assert image_version(f"{registry}{repo}:v{version}{suffix}{digest}") == version


@given(
    st.tuples(*[st.integers(min_value=0, max_value=99)] * 3).map(lambda t: ".".join(map(str, t))),
    _REPO,
)
def test_a_release_tag_names_its_version_covered_or_not(version: str, repo: str) -> None:
    assert image_release(f"{repo}:v{version}") == version
    assert image_version(f"{repo}:v{version}") == (version if version in COVERED else None)


@given(st.text(alphabet="0123456789abcdef", min_size=7, max_size=40), _REPO, _REGISTRY)
def test_nightly_and_commit_builds_are_unknown(sha: str, repo: str, registry: str) -> None:
    for tag in (f"nightly-{sha}", f"nightly-dev-x86_64-cu13.0.1-{sha[:7]}", sha, f"dev-{sha}"):
        assert image_version(f"{registry}{repo}:{tag}") is None


@given(st.one_of(st.none(), st.text(), st.text(alphabet=string.printable)))
def test_any_image_text_is_a_covered_version_or_unknown(image: str | None) -> None:
    found = image_version(image)
    assert found is None or found in COVERED
    release = image_release(image)
    assert found is None or found == release


def test_disable_cascade_attn_default_changed_at_0_18_0() -> None:
    by_version = version_defaults()["disable_cascade_attn"]
    assert by_version["0.17.0"] == "false"
    assert by_version["0.18.0"] == "true"
    assert default_at("disable_cascade_attn", "0.17.0") == "false"
    assert default_at("disable_cascade_attn", "0.27.1") == "true"
    assert defaults_at("0.18.0")["disable_cascade_attn"] == "true"
    assert describe_default("disable_cascade_attn") == "false ≤0.17.0, true ≥0.18.0"


def test_absent_unset_and_computed_defaults_are_told_apart() -> None:
    by_version = version_defaults()["kv_offloading_backend"]
    assert by_version["0.10.1"] == ABSENT
    assert by_version["0.13.0"] == UNSET
    assert by_version["0.14.0"] == "native"
    assert version_defaults()["config_format"]["0.10.1"] == COMPUTED
    assert "kv_offloading_backend" not in defaults_at("0.13.0")
    assert default_at("kv_offloading_backend", "0.13.0") is None
    assert describe_default("kv_offloading_backend") == (
        "not a flag ≤0.11.0, unset 0.11.2–0.13.0, native ≥0.14.0"
    )


def test_version_defaults_and_stable_defaults_do_not_overlap() -> None:
    stable = stable_defaults()
    for key, by_version in version_defaults().items():
        assert key not in stable
        concrete = versioned_values()[key]
        assert concrete, key
        # not one concrete value in every version that has the flag
        present = {v for v in by_version.values() if v != ABSENT}
        assert len(present) > 1, key
    assert default_at("moe_backend", "0.18.0") == stable["moe_backend"] == "auto"
    assert default_at("moe_backend", "0.10.1") is None  # not a flag of 0.10.1
    assert default_at("model", "0.18.0") is None  # the model is never a default


def test_a_record_drops_its_own_version_defaults_only() -> None:
    defaults = VersionDefaults()
    explicit = FlagSet({"disable_cascade_attn": "true", "block_size": "64"})
    assert defaults.drop(explicit, "vllm/vllm-openai:v0.18.0") == FlagSet({"block_size": "64"})
    assert defaults.drop(explicit, "vllm/vllm-openai-rocm:v0.17.0") == explicit
    off = FlagSet({"disable_cascade_attn": "false"})
    assert defaults.drop(off, "vllm/vllm-openai-rocm:v0.17.0") == FlagSet()
    assert defaults.drop(off, "vllm/vllm-openai:v0.18.0") == off
    assert defaults.drop(explicit, NIGHTLY) == explicit  # unknown version: as written
    assert defaults.drop(explicit, None) == explicit


def test_a_recipe_item_is_versioned_when_some_version_has_it_as_default() -> None:
    defaults = VersionDefaults()
    flags = FlagSet({"disable_cascade_attn": "true", "kv_offloading_backend": "lmcache"})
    assert defaults.versioned(flags) == {("disable_cascade_attn", "true")}
    assert defaults.versioned(FlagSet({"moe_backend": "auto"})) == frozenset()
    assert defaults.runs("disable_cascade_attn", "true", "vllm/vllm-openai:v0.18.0")
    assert not defaults.runs("disable_cascade_attn", "true", "vllm/vllm-openai:v0.17.0")
    assert not defaults.runs("disable_cascade_attn", "true", NIGHTLY)
    assert defaults.unknown("disable_cascade_attn", "true", NIGHTLY)
    assert not defaults.unknown("disable_cascade_attn", "true", "vllm/vllm-openai:v0.18.0")
    assert not defaults.unknown("block_size", "64", NIGHTLY)


def test_the_unknown_version_note_names_the_defaults_and_the_images() -> None:
    assert unknown_version_note("disable_cascade_attn", [NIGHTLY]) == (
        "vLLM's default of disable_cascade_attn depends on the version (false ≤0.17.0, "
        f"true ≥0.18.0); the evidence's vLLM version is unknown (image {NIGHTLY})"
    )
    many = unknown_version_note("disable_cascade_attn", ["d", "c", None, "b", "a"])
    assert many.endswith("unknown (images a, b, c and 2 more)")


def test_without_vllm_knowledge_no_version_defaults() -> None:
    assert Policy(knowledge=False).versions is None
    assert isinstance(Policy().versions, VersionDefaults)


def test_docs_list_every_version_dependent_default() -> None:
    """docs/flags.md's table of version-dependent defaults is the knowledge table's."""
    from pathlib import Path

    from provenance.normalise.policy import default_policy

    text = (Path(__file__).resolve().parents[2] / "docs" / "flags.md").read_text("utf-8")
    policy = default_policy()
    for key in version_defaults():
        row = f"| `{key}` | {policy.classify(key)} | {describe_default(key)} |"
        assert row in text, key
