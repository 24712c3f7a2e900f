"""Hand-made recipes, combinations, evidence and ledger entries for the audit tests.

``StandInNormaliser`` is a tiny test-only stand-in for the flags layer: it
splits ``--key value`` / ``--key=value`` / bare booleans, explodes JSON object
values into dotted keys and keeps every key except a small harness list as
major. It is deliberately simple and lives only in the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from provenance.audit.index import EvidenceIndex
from provenance.audit.normaliser import UnitFacts
from provenance.audit.verdicts import VerdictEntry
from provenance.model.combination import (
    EnvValue,
    PdPool,
    PdSelection,
    RenderResult,
    RoleCommand,
    Selection,
)
from provenance.model.flags import FlagSet
from provenance.model.ledger import LedgerEntry, PrRef, SweepRun
from provenance.model.record import (
    EvidenceRecord,
    EvidenceSource,
    PartialMarker,
    RoleTopology,
    SourceFile,
    Topology,
    WorkloadPoint,
)

NVFP4 = "nvidia/MiniMax-M3-NVFP4"
HARNESS = {
    "port",
    "host",
    "kv_transfer_config",
    "tool_call_parser",
    "enable_auto_tool_choice",
    "reasoning_parser",
    "served_model_name",
}
MAJOR_ENV = {"env:VLLM_FLOAT32_MATMUL_PRECISION"}


def verdict_entry(**fields: Any) -> VerdictEntry:
    """A ``VerdictEntry`` from its fields, where ``selection=`` (one plain selection) or
    ``selections=`` (plain selections) may stand for the selection sets and their count
    (:meth:`VerdictEntry.of_selections`)."""
    single = fields.pop("selection", None)
    selections = [*([single] if single is not None else []), *fields.pop("selections", ())]
    return VerdictEntry.of_selections(selections=selections, **fields)


def _canon(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_flags(argv: Sequence[str], env: Mapping[str, object] | None = None) -> FlagSet:
    tokens = list(argv)
    if tokens[:2] == ["vllm", "serve"]:
        tokens = tokens[3:]
    flags: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        key = token.lstrip("-")
        value: str = "true"
        if "=" in key:
            key, value = key.split("=", 1)
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            value = tokens[i + 1]
            i += 1
        key = key.replace("-", "_")
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = value
        if isinstance(decoded, dict):
            for sub, sub_value in decoded.items():
                flags[f"{key}.{sub}"] = _canon(sub_value)
        else:
            flags[key] = _canon(decoded) if not isinstance(decoded, str) else value
        i += 1
    for name, env_value in (env or {}).items():
        flags[f"env:{name}"] = _canon(env_value)
    return FlagSet(flags)


class StandInNormaliser:
    def __init__(self) -> None:
        self.calls = 0

    def classify(self, key: str) -> str:
        if key.startswith("env:"):
            return "major" if key in MAJOR_ENV else "harness"
        return "harness" if key in HARNESS else "major"

    def major(self, flags: FlagSet) -> FlagSet:
        return FlagSet({k: v for k, v in flags.items() if self.classify(k) == "major"})

    def in_context(self, major: FlagSet, role: str) -> FlagSet:
        """No context rules: the stand-in compares every major flag in every role."""
        return major

    def role_major(self, flags: FlagSet, role: str) -> FlagSet:
        return self.major(flags)

    def command_major(self, argv: Sequence[str], env: Mapping[str, object]) -> FlagSet:
        self.calls += 1
        return self.major(parse_flags(argv, env))

    def units_major(
        self, head: tuple[str, ...], units: Sequence[tuple[str, ...]], env: Mapping[str, object]
    ) -> FlagSet:
        return self.command_major([*head, *(token for unit in units for token in unit)], env)

    def unit_facts(self, unit: tuple[str, ...]) -> UnitFacts:
        """Only the audit by factors asks (these tests hand over combinations, not cells)."""
        raise NotImplementedError("the stand-in normaliser does not analyse argv units")


# Evidence -------------------------------------------------------------------


def flags(text: str) -> FlagSet:
    """``"a=1 b=2"`` → FlagSet."""
    return FlagSet(dict(item.split("=", 1) for item in text.split()))


def single_record(
    config_key: str,
    serve: str,
    *,
    hardware: str = "b200",
    checkpoint: str = NVFP4,
    partial: bool = False,
    conc: int = 64,
) -> EvidenceRecord:
    return EvidenceRecord(
        source=EvidenceSource(
            commit="a" * 40,
            files=(
                SourceFile(path=f"launchers/{config_key}.sh", blob_sha="b" * 40, kind="launcher"),
            ),
        ),
        config_key=config_key,
        checkpoint=checkpoint,
        hardware=hardware,
        framework="vllm",
        topology=Topology(
            kind="single_node",
            roles={"serve": RoleTopology(gpus_per_worker=8, tp=8)},
            gpus_per_node=8,
            total_gpus=8,
        ),
        workloads=(WorkloadPoint(isl=8192, osl=1024, conc=conc),),
        roles={"serve": flags(serve)},
        partial=(
            (PartialMarker(construct_name="command-substitution", path="x.sh"),) if partial else ()
        ),
    ).with_id()


def pd_record(
    config_key: str,
    prefill: str,
    decode: str,
    *,
    hardware: str = "b300",
    checkpoint: str = NVFP4,
    prefill_topology: RoleTopology | None = None,
    decode_topology: RoleTopology | None = None,
    colocated: bool = False,
) -> EvidenceRecord:
    prefill_topology = prefill_topology or RoleTopology(gpus_per_worker=8, tp=8)
    decode_topology = decode_topology or RoleTopology(gpus_per_worker=8, tp=8)
    total = (
        prefill_topology.workers * prefill_topology.gpus_per_worker
        + decode_topology.workers * decode_topology.gpus_per_worker
    )
    return EvidenceRecord(
        source=EvidenceSource(
            commit="c" * 40,
            files=(
                SourceFile(
                    path=f"srt/{config_key}.yaml", blob_sha="d" * 40, kind="srt-slurm-recipe"
                ),
            ),
        ),
        config_key=config_key,
        checkpoint=checkpoint,
        hardware=hardware,
        framework="dynamo-vllm",
        topology=Topology(
            kind="disaggregated",
            roles={"prefill": prefill_topology, "decode": decode_topology},
            gpus_per_node=8,
            colocated=colocated,
            total_gpus=total,
        ),
        workloads=(WorkloadPoint(isl=8192, osl=1024, conc=64),),
        roles={"prefill": flags(prefill), "decode": flags(decode)},
    ).with_id()


def entry(number: int, *records: EvidenceRecord, green: bool = True) -> LedgerEntry:
    return LedgerEntry(
        pr=PrRef(repo="SemiAnalysisAI/InferenceX", number=number),
        title=f"PR {number}",
        records=tuple(r.id for r in records),
        sweeps=(
            SweepRun(
                run_id=1000 + number,
                head_sha="0" * 40,
                conclusion="success" if green else "failure",
                source="test",
            ),
        ),
    )


def graph_of(
    records: Sequence[EvidenceRecord], entries: Sequence[LedgerEntry], normaliser: StandInNormaliser
) -> EvidenceIndex:
    return EvidenceIndex.build(records, entries, normaliser.role_major)


# Recipe side ------------------------------------------------------------------


def argv_of(text: str, model: str = NVFP4) -> tuple[str, ...]:
    return ("vllm", "serve", model, *text.split())


def single_combo(
    args: str,
    *,
    variant: str = "nvfp4",
    hardware: str = "b200",
    strategy: str = "single_node_tp",
    features: tuple[str, ...] = (),
    feature_modes: dict[str, str | None] | None = None,
    env: dict[str, EnvValue] | None = None,
    model: str = NVFP4,
) -> tuple[Selection, RenderResult]:
    selection = Selection(
        variant=variant,
        hardware=hardware,
        strategy=strategy,
        node_count=1,
        features=features,
        feature_modes=feature_modes or {},
    )
    result = RenderResult(
        deploy_type="single_node",
        model_id=model,
        roles=(
            RoleCommand(role="serve", node_rank=None, argv=argv_of(args, model), env=env or {}),
        ),
    )
    return selection, result


def pd_combo(
    prefill: str,
    decode: str,
    *,
    variant: str = "nvfp4",
    hardware: str = "b300",
    prefill_pool: tuple[int, str] = (1, "tp"),
    decode_pool: tuple[int, str] = (1, "tp"),
    features: tuple[str, ...] = (),
    feature_modes: dict[str, str | None] | None = None,
    model: str = NVFP4,
) -> tuple[Selection, RenderResult]:
    selection = Selection(
        variant=variant,
        hardware=hardware,
        strategy="pd_cluster",
        node_count=None,
        pd=PdSelection(
            prefill=PdPool(nodes=prefill_pool[0], parallelism=prefill_pool[1]),
            decode=PdPool(nodes=decode_pool[0], parallelism=decode_pool[1]),
        ),
        features=features,
        feature_modes=feature_modes or {},
    )
    result = RenderResult(
        deploy_type="pd_cluster",
        model_id=model,
        roles=(
            RoleCommand(role="prefill", node_rank=0, argv=argv_of(prefill, model)),
            RoleCommand(role="decode", node_rank=0, argv=argv_of(decode, model)),
        ),
    )
    return selection, result
