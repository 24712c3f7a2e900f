#!/usr/bin/env bash
# Record the InferenceX sweep runs that validated the MiniMax-M3 evidence PRs.
#
# Facts (run id, attempt, head SHA, conclusion, eval range) come from review threads and
# PR bodies, as collected in ../shared/corpus/README.md and
# ../shared/specs/inferencex-evidence-spec.md §9; each record names its source.
# Where the source does not state the attempt, the run's first attempt is recorded and
# the source says so. #2314's swept head is not stated anywhere we have, so its run
# (30042427571) is not recorded: its evidence stays "not validated" until someone
# records it (e.g. `provenance ingest sweeps` with a token).
#
# Usage: scripts/record_sweeps.sh [LEDGER_DIR]   (default: ledger)
set -euo pipefail
LEDGER="${1:-ledger}"
IX="SemiAnalysisAI/InferenceX"
RUNS="https://github.com/$IX/actions/runs"

sweep() {  # pr run attempt head conclusion eval source
  local pr="$1" run="$2" attempt="$3" head="$4" conclusion="$5" eval="$6" source="$7"
  local args=(--ledger "$LEDGER" --pr "$IX#$pr" --run "$run" --attempt "$attempt"
              --head "$head" --conclusion "$conclusion" --url "$RUNS/$run" --source "$source")
  [ -n "$eval" ] && args+=(--eval "$eval")
  provenance ledger add-sweep "${args[@]}"
}

SPEC="inferencex-evidence-spec §9"
ATT="attempt not stated in the source; first attempt recorded"

sweep 2120 29984401390 1 0b896e92f975d0ef8e374fdc284b06444fc95242 success "GSM8K=0.948..0.958" \
  "review-thread: Klaud-Cold verdict on InferenceX#2120 (2026-07-23), Ankur-singh sign-off (2026-07-28), recipes#682 comment (2026-07-27); shared/corpus/README.md"
sweep 2230 30118047286 1 6ebf4aca15d6e5a1240ebb1e90fda8feb88904e9 success "GSM8K=0.9484..0.9530" \
  "PR body and verdict PASS 2026-07-27 (/reuse-sweep-run 30118047286); $SPEC; $ATT"
sweep 2310 30018717056 1 40b363d695d0cd2dbfe32af7dbe6975493700bdf success "GSM8K=0.9151..0.9583" \
  "verdict PASS 2026-07-23 (/reuse-sweep-run 30018717056); $SPEC; $ATT"
sweep 2337 30216094952 1 315b9a01786560b6d33ea3133c13ad5bc0f672b5 success "GSM8K=0.9515..0.9613" \
  "sign-off 'Run Sweep 30216094952, attempt 1'; verdict 2026-07-28; $SPEC"
sweep 2182 29591495842 1 e1955fe24e142a8d6b358585957dab93bf36c500 success "GSM8K=0.922..0.961" \
  "verdict PASS 2026-07-17; $SPEC; $ATT"
sweep 2184 29358158271 1 30be934787b337bba8ef5f30bce5fb896dd616ea success "GSM8K=0.951..0.961" \
  "verdict PASS 2026-07-15; $SPEC; $ATT"
sweep 2338 30208342156 1 666f505239e914b98432d3b535145ebeff7346ad success "GSM8K=0.9538..0.9598" \
  "verdict PASS 2026-07-27; $SPEC; $ATT"
sweep 2470 30841588542 1 fc5181f185b5dbd3b7d176d22f86c4b7b952725b success "GSM8K=0.9500..0.9545" \
  "verdict 2026-08-03 (run green; PR rejected on recipe parity until recipes#735); $SPEC; $ATT"
sweep 2483 30860526083 1 fa04264f6a3518754e8005f86cccc39c8fdf7b68 success "GSM8K=0.951..0.951" \
  "verdict 2026-08-04 (run green; PR rejected: deprecated scenario); $SPEC; $ATT"
sweep 2006 28689732075 1 0523519b93f68fbf4bd76d640ffdc3f880875c47 success "GSM8K=0.954..0.960" \
  "verdict PASS 2026-07-06; $SPEC; $ATT"
sweep 1929 28145405377 1 ec78fc5984b3cc05e14d568fb2679e6db696d698 success "GSM8K=0.947..0.958" \
  "verdict 2026-06-25; $SPEC; $ATT"
sweep 2328 30849838984 1 8767d90c11860a10668f2d66179711a9c24fc8bd success "" \
  "Ankur-singh sign-off (source run; reuse no-op 30877891720 not counted); $SPEC; $ATT"
sweep 2610 31833066181 1 086298aefe1180e56d5594c39d3308951b96aa91 success "GSM8K=0.9697..0.9697" \
  "verdict PASS 2026-08-15; $SPEC"
sweep 2611 31833401868 1 5c3e65cf4c59db9966a9b16eb0035702bc5cf692 success "GSM8K=0.9674..0.9674" \
  "sign-off; $SPEC"
sweep 2663 32505173269 1 e78bc8bd6a9a2373e2d652589d7913dffff19d34 success "GSM8K=0.96967..0.97271" \
  "verdict PASS 2026-08-21 (/reuse-sweep-run 32505173269); $SPEC; $ATT"
