"""Claims: a hardware (``meta.hardware``) or a KV offload choice (``kv_offload_support``)
the recipe marks ``verified`` with no recommended combination on it.

In vllm-project/recipes, ``verified`` means "GPUs you've actually tested with this recipe
end-to-end" (its CONTRIBUTING.md), not "InferenceX benchmarked these flags". So a claim is
judged against InferenceX's universe, read from the ledger itself (:class:`Coverage`):

* ``in-coverage``: InferenceX ran the recipe's model on that hardware (for a KV offload
  claim: ran the option's KV connector with the model), so evidence could back the claim
  and its absence is a finding;
* ``outside-coverage``: InferenceX never ran it, so no evidence can exist; the claim is
  reported and never fails the gate.

A reviewed declaration can acknowledge a claim of either kind
(:meth:`DeclarationMatcher.declared_claim`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from provenance.audit.declarations import DeclarationMatcher
from provenance.audit.index import EvidenceIndex
from provenance.audit.tally import Tally
from provenance.audit.verdicts import Claim
from provenance.errors import ProvenanceError
from provenance.model.scope import same_checkpoint
from provenance.normalise.canonical import normalise_argv
from provenance.recipes.load.schema import KvOffloadOption

#: The canonical key naming the KV connector of ``--kv-transfer-config``.
KV_CONNECTOR_KEY = "kv_transfer_config.kv_connector"


@dataclass(frozen=True)
class Coverage:
    """What InferenceX ever ran for one recipe, from the ledger: the hardware it ran the
    recipe's model on, and the KV connectors it ran with that model (on any hardware)."""

    hardware: frozenset[str] = frozenset()
    kv_connectors: frozenset[str] = frozenset()

    @classmethod
    def of(cls, graph: EvidenceIndex, model_ids: Collection[str]) -> Coverage:
        hardware: set[str] = set()
        connectors: set[str] = set()
        ours: dict[str, bool] = {}  # checkpoint -> is it one of ``model_ids``
        for indexed in graph.records.values():
            checkpoint = indexed.record.checkpoint
            mine = ours.get(checkpoint)
            if mine is None:
                mine = ours[checkpoint] = any(same_checkpoint(m, checkpoint) for m in model_ids)
            if not mine:
                continue
            hardware.add(indexed.scope.hardware)
            for flags in indexed.record.roles.values():
                connector = flags.get(KV_CONNECTOR_KEY)
                if connector is not None:
                    connectors.add(connector)
        return cls(hardware=frozenset(hardware), kv_connectors=frozenset(connectors))


@dataclass(frozen=True)
class ClaimInputs:
    """A recipe's ``verified`` claims and how to judge them."""

    verified_hardware: Sequence[str] = ()
    #: ``kv_offload_support`` keys marked ``verified``
    verified_kv: Sequence[str] = ()
    #: KV offload key -> the KV connector its ``--kv-transfer-config`` names (absent: none)
    kv_connectors: Mapping[str, str] = field(default_factory=dict)


def claims_of(
    recipe: str,
    inputs: ClaimInputs,
    tally: Tally,
    hardware_filter: Sequence[str] | None,
    filtered: bool = False,
    coverage: Coverage | None = None,
    matcher: DeclarationMatcher | None = None,
) -> list[Claim]:
    """``meta.hardware.<hw>: verified`` with no recommended combination audited on it.

    ``filtered``: the enumeration was narrowed (variant, strategy, features, …), so a
    verified hardware with no audited combination is not a claim.

    ``kv_offload_support.<key>: verified`` is a claim when combinations with that KV
    offload choice were audited (``--kv``; a PR audit enumerates KV offload whenever a
    side declares any) and none of them is recommended.

    ``coverage`` (``None``: everything is in coverage) sets each claim's ``coverage``;
    ``matcher`` its ``declared_by``."""
    claims = []
    for hardware in inputs.verified_hardware:
        if hardware_filter is not None and hardware not in hardware_filter:
            continue
        recommended = tally.recommended_by_hardware.get(hardware, 0)
        if recommended:
            continue
        audited = hardware in tally.hardware_seen
        if not audited and filtered:
            continue
        covered = coverage is None or hardware.lower() in coverage.hardware
        claims.append(
            Claim(
                recipe=recipe,
                hardware=hardware,
                claim="verified",
                recommended=0,
                detail=_detail(
                    "in meta.hardware",
                    "on it",
                    audited,
                    None if covered else f"InferenceX never ran this model on {hardware}",
                ),
                coverage="in-coverage" if covered else "outside-coverage",
            )
        )
    for key in inputs.verified_kv:
        if key not in tally.kv_seen or tally.recommended_by_kv.get(key, 0):
            continue
        connector = inputs.kv_connectors.get(key)
        covered = coverage is None or (
            connector is not None and connector in coverage.kv_connectors
        )
        outside = (
            f"InferenceX never ran {connector} with this model"
            if connector is not None
            else "its command names no KV connector InferenceX could have run"
        )
        claims.append(
            Claim(
                recipe=recipe,
                hardware="",
                kv_offload=key,
                claim="verified",
                recommended=0,
                detail=_detail(
                    f"in kv_offload_support.{key}", "with it", True, None if covered else outside
                ),
                coverage="in-coverage" if covered else "outside-coverage",
            )
        )
    if matcher:
        claims = [
            claim.model_copy(update={"declared_by": matcher.declared_claim(claim)})
            for claim in claims
        ]
    return claims


def _detail(where: str, on: str, audited: bool, outside: str | None) -> str:
    said = (
        f"marked verified {where}, but no audited combination {on} is recommended"
        if audited
        else f"marked verified {where}, but no combination {on} was audited"
    )
    if outside is not None:
        said += f"; outside InferenceX coverage ({outside}), so no evidence can back it"
    return said


def kv_connectors(options: Mapping[str, KvOffloadOption | None]) -> dict[str, str]:
    """KV offload key -> the KV connector its ``--kv-transfer-config`` names (the taxonomy's
    ``kv_offload`` options; an option without one, or with an unreadable one, is left out)."""
    found: dict[str, str] = {}
    for key, option in options.items():
        if option is None or not option.args:
            continue
        try:
            flags = normalise_argv([str(arg) for arg in option.args]).flags
        except ProvenanceError:
            continue  # the audit itself reports a broken option where it renders it
        connector = flags.get(KV_CONNECTOR_KEY)
        if connector is not None:
            found[key] = connector
    return found
