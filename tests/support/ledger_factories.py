"""Hand-built evidence records and ledger entries for the ledger tests (and their subprocesses)."""

from __future__ import annotations

import datetime as dt

from provenance.model.flags import FlagSet
from provenance.model.ledger import EvalScore, LedgerEntry, LedgerFile, PrRef, SweepRun
from provenance.model.record import (
    EvidenceRecord,
    EvidenceSource,
    RoleTopology,
    SourceFile,
    Topology,
    WorkloadPoint,
)

COMMIT = "7a428f8" + "0" * 33
BLOB = "b" * 40
PR = PrRef(repo="SemiAnalysisAI/InferenceX", number=2120)


def make_record(
    index: int = 0,
    *,
    commit: str = COMMIT,
    path: str = "benchmarks/single_node/minimaxm3_fp4_b200.sh",
    blob_sha: str = BLOB,
    flags: dict[str, str] | None = None,
) -> EvidenceRecord:
    """A plausible single-node record; ``index`` varies the concurrency (and so the id)."""
    return EvidenceRecord(
        source=EvidenceSource(
            commit=commit,
            files=(SourceFile(path=path, blob_sha=blob_sha, kind="launcher"),),
        ),
        config_key="minimaxm3-fp4-b200-vllm",
        checkpoint="MiniMaxAI/MiniMax-M3-NVFP4",
        hardware="b200",
        precision="fp4",
        framework="vllm",
        image="vllm/vllm-openai:v0.11.0",
        topology=Topology(
            kind="single_node",
            roles={"serve": RoleTopology(gpus_per_worker=4, tp=4)},
            total_gpus=4,
        ),
        workloads=(WorkloadPoint(isl=1024, osl=1024, conc=4 + index),),
        roles={
            "serve": FlagSet(
                flags
                or {
                    "tensor_parallel_size": "4",
                    "attention_config.indexer_kv_dtype": "fp8",
                    "kv_cache_dtype": "fp8",
                }
            )
        },
    )


def make_sweep(run_id: int = 19000001, *, source: str = "manual") -> SweepRun:
    return SweepRun(
        run_id=run_id,
        attempt=1,
        head_sha="c" * 40,
        conclusion="success",
        evals=(EvalScore(name="gsm8k", low=0.91, high=0.93, source=source),),
        source=source,
        recorded=dt.date(2026, 11, 1),
    )


def make_entry(records: tuple[str, ...] = (), *, pr: PrRef = PR, **extra: object) -> LedgerEntry:
    data: dict[str, object] = {
        "pr": pr,
        "title": "MiniMax-M3 NVFP4 B200: FP8 indexer cache",
        "merge_commit": COMMIT,
        "merged_at": dt.date(2026, 10, 2),
        "config_keys": ("minimaxm3-fp4-b200-vllm",),
        "files": (
            LedgerFile(
                path="benchmarks/single_node/minimaxm3_fp4_b200.sh", blob_sha=BLOB, commit=COMMIT
            ),
        ),
        "records": records,
        "sources": ("git:" + COMMIT,),
    }
    data.update(extra)
    return LedgerEntry.model_validate(data)
