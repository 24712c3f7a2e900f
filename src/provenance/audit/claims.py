"""Claims: a hardware (``meta.hardware``) or a KV offload choice (``kv_offload_support``)
the recipe marks ``verified`` with no recommended combination on it."""

from __future__ import annotations

from collections.abc import Sequence

from provenance.audit.tally import Tally
from provenance.audit.verdicts import Claim


def claims_of(
    recipe: str,
    verified_hardware: Sequence[str],
    tally: Tally,
    hardware_filter: Sequence[str] | None,
    filtered: bool = False,
    verified_kv: Sequence[str] = (),
) -> list[Claim]:
    """``meta.hardware.<hw>: verified`` with no recommended combination audited on it.

    ``filtered``: the enumeration was narrowed (variant, strategy, features, …), so a
    verified hardware with no audited combination is not a claim.

    ``kv_offload_support.<key>: verified`` is a claim when combinations with that KV
    offload choice were audited (``--kv``; a PR audit enumerates KV offload whenever a
    side declares any) and none of them is recommended."""
    claims = []
    for hardware in verified_hardware:
        if hardware_filter is not None and hardware not in hardware_filter:
            continue
        recommended = tally.recommended_by_hardware.get(hardware, 0)
        if recommended:
            continue
        audited = hardware in tally.hardware_seen
        if not audited and filtered:
            continue
        claims.append(
            Claim(
                recipe=recipe,
                hardware=hardware,
                claim="verified",
                recommended=0,
                detail=(
                    "marked verified in meta.hardware, but no audited combination on it "
                    "is recommended"
                    if audited
                    else "marked verified in meta.hardware, but no combination on it was audited"
                ),
            )
        )
    for key in verified_kv:
        if key not in tally.kv_seen or tally.recommended_by_kv.get(key, 0):
            continue
        claims.append(
            Claim(
                recipe=recipe,
                hardware="",
                kv_offload=key,
                claim="verified",
                recommended=0,
                detail=(
                    f"marked verified in kv_offload_support.{key}, but no audited "
                    "combination with it is recommended"
                ),
            )
        )
    return claims
