"""A small hand-made audit with unreachable combinations (reason ``unreachable``), for
the tests of how every output groups them apart."""

from __future__ import annotations

from audit_builders import verdict_entry

from provenance.audit.summary import summarise
from provenance.audit.verdicts import AuditReport, Reason, VerdictEntry
from provenance.model.combination import Selection
from provenance.model.reasons import ReasonCode, VerdictKind

RECIPE = "Org/Model"
WHY = "every point: a prefill engine on 1 GPU(s); a pool uses 1-16 whole nodes of 8 GPUs"
UNREACHABLE = Reason(code=ReasonCode.UNREACHABLE, detail=WHY)
UNEVIDENCED = Reason(code=ReasonCode.FLAG_UNEVIDENCED, role="prefill", flag="x", recipe_value="1")
NO_EVIDENCE = Reason(code=ReasonCode.NO_EVIDENCE)


def guide_entry(
    variant: str, hardware: str, strategy: str, reasons: tuple[Reason, ...], features: int = 1
) -> VerdictEntry:
    selections = [
        Selection(
            variant=variant,
            hardware=hardware,
            strategy=strategy,
            node_count=1,
            features=(f"f{i}",) if i else (),
        )
        for i in range(features)
    ]
    return verdict_entry(
        recipe=RECIPE,
        selections=selections,
        verdict=VerdictKind.GUIDE_ONLY,
        roles=(),
        reasons=reasons,
    )


def make(verdicts: list[VerdictEntry]) -> AuditReport:
    return AuditReport(
        tool_version="0",
        recipes=(RECIPE,),
        summary=summarise(verdicts, sum(v.combinations for v in verdicts)),
        verdicts=tuple(verdicts),
    )


def sample() -> AuditReport:
    """Three unreachable NVFP4 combinations on B300 (two entries, one group), one B200
    combination with a flag difference only and one unbenchmarked."""
    return make(
        [
            guide_entry("nvfp4", "b300", "single_node_tp", (UNREACHABLE, UNEVIDENCED), features=2),
            guide_entry("nvfp4", "b200", "single_node_tp", (UNEVIDENCED,)),
            guide_entry("nvfp4", "b300", "single_node_tp", (UNREACHABLE,)),
            guide_entry("bf16", "h100", "single_node_tp", (NO_EVIDENCE,)),
        ]
    )
