#!/usr/bin/env bash
# Record the InferenceX sweep runs that validated evidence PRs of the embedded ledger.
#
# Facts (run id, attempt, head SHA, conclusion, eval range) come from review threads and
# PR bodies: for MiniMax-M3 as collected in ../shared/corpus/README.md and
# ../shared/specs/inferencex-evidence-spec.md §9; for the other models (and two more
# MiniMax-M3 PRs) from the Klaud-Cold verdict comments or sign-offs on the public PR
# threads, whose URL each record's source names. Those comments give the swept commit as
# an abbreviated SHA; the full SHA is that commit in the PR's refs/pull/N/head history
# of the InferenceX mirror (checked with `git merge-base --is-ancestor`).
# Where the source does not state the attempt, the run's first attempt is recorded and
# the source says so. #2314's swept head is not stated anywhere we have, so its run
# (30042427571) is not recorded: its evidence stays "not validated" until someone
# records it (e.g. `provenance ingest sweeps` with a token).
# A PR the ledger has no entry for (it backs no record) is skipped, never created.
#
# Usage: scripts/record_sweeps.sh [LEDGER_DIR]   (default: ledger)
set -euo pipefail
LEDGER="${1:-ledger}"
IX="SemiAnalysisAI/InferenceX"
RUNS="https://github.com/$IX/actions/runs"

sweep() {  # pr run attempt head conclusion eval source
  local pr="$1" run="$2" attempt="$3" head="$4" conclusion="$5" eval="$6" source="$7"
  if [ ! -f "$LEDGER/prs/SemiAnalysisAI__InferenceX__$pr.yaml" ]; then
    echo "skipped $IX#$pr: no ledger entry (it backs no record)" >&2
    return 0
  fi
  local args=(--ledger "$LEDGER" --pr "$IX#$pr" --run "$run" --attempt "$attempt"
              --head "$head" --conclusion "$conclusion" --url "$RUNS/$run" --source "$source")
  [ -n "$eval" ] && args+=(--eval "$eval")
  provenance ledger add-sweep "${args[@]}"
}

SPEC="inferencex-evidence-spec §9"
PULL="https://github.com/$IX/pull"
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

# --- From the public PR threads (verdict or sign-off comment; URL in each source) -------
# Short SHA in the comment -> full SHA found in the PR's refs/pull/N/head history.
VERDICT="Klaud-Cold verdict comment"
SHORT="short SHA in the source, full SHA from refs/pull/N/head in the mirror"

# MiniMax-M3 (AMD)
sweep 2104 28818573150 1 d22dc47462c3c48cca9df9664a301ee5f41e12cf success "GSM8K=0.9378..0.9401" \
  "$VERDICT PASS 2026-07-24 on $PULL/2104 (commit d22dc474); $SHORT; $ATT"
sweep 2118 30346826643 1 4aebb99b87634f80c762a7fa46378f00b7c88ebd success "GSM8K=0.951..0.951" \
  "$VERDICT PASS 2026-07-28 on $PULL/2118 (head 4aebb99); $SHORT; $ATT"

# DeepSeek-V4-Pro
sweep 2169 29177379558 1 238dc77d5d223839ab7a9e6b31f9e6e5a94180d8 success "GSM8K=0.959..0.967" \
  "$VERDICT PASS 2026-07-12 on $PULL/2169 (head 238dc77); $SHORT; $ATT"
sweep 2224 29445892486 1 455eabceeee9ac22a616c70b644afff14ea11876 success "" \
  "$VERDICT 2026-07-16 on $PULL/2224 (Check 1 PASS at 455eabc, 28 agentic jobs green; REJECTED on recipe parity); $SHORT; $ATT"
sweep 2258 29778042138 1 9e950faccdc9b3d4020b05cffe73e7980f3e4391 success "SWE-bench-Lite=0.5367..0.5367" \
  "$VERDICT PASS 2026-07-21 on $PULL/2258 (commit 9e950fac); $SHORT; $ATT"
sweep 2259 29778042858 1 bc4065e7bc9b291ffe1311f1c05e838d476026f5 success "SWE-bench-Lite=0.5733..0.5733" \
  "$VERDICT PASS 2026-07-22 on $PULL/2259 (commit bc4065e7); $SHORT; $ATT"
sweep 2341 30231719317 1 e1680ab8caa6d40a75703e8f4cde9563ba521771 success "" \
  "$VERDICT PASS 2026-07-27 on $PULL/2341 (commit e1680ab8; multi-node agentic, no eval); $SHORT; $ATT"

# Kimi-K2.5
sweep 2512 31147925932 1 11b75f153ba57197d8282064bd5272bb51973b26 success "" \
  "Ankur-singh sign-off detail on $PULL/2512 (run at in-PR commit 11b75f153: 42/42 single-node 8k1k + 9/9 eval success); $SHORT; $ATT"
sweep 2513 31148296509 1 3b6a21fdc9bdb9dd7503172457cc51deebdc4b05 success "" \
  "Ankur-singh sign-off detail on $PULL/2513 (run at in-PR commit 3b6a21fdc: 24/24 single-node 8k1k + 6/6 eval success); $SHORT; $ATT"

# Kimi-K2.6
sweep 2228 29506569772 1 38c7812956db0c08379fb06b4df3d522c190354d success "" \
  "$VERDICT PASS 2026-07-16 on $PULL/2228 (head 38c7812, 20 agentic jobs green, no eval lane); $SHORT; $ATT"
sweep 2360 30495901633 1 67d610dcbe5b5fd5d9d1877f07130937e4de393e success "GSM8K=0.9651..0.9742" \
  "$VERDICT PASS 2026-07-30 on $PULL/2360 (head 67d610dc); $SHORT; $ATT"
sweep 2438 30669586535 1 fc2609111631afc2363f1133fad5a960e9638845 success "GSM8K=0.9651..0.9719" \
  "$VERDICT PASS 2026-08-02 on $PULL/2438 (head fc26091); $SHORT; $ATT"

# Kimi-K3
sweep 2616 31893747354 1 630dc8c73f84d6f3a74062384c86aa660440929f success "GSM8K=0.9727..0.9727" \
  "$VERDICT 2026-08-15 on $PULL/2616 (Check 1 PASS at 630dc8c73; REJECTED: deprecated non-DSpark arm, recipe parity); $SHORT; $ATT"
sweep 2637 32146276534 1 8b414ae8ab63a7102975f0816573d8db89c9ab1e success "GSM8K=0.965..0.969" \
  "$VERDICT 2026-08-18 on $PULL/2637 (Check 1 PASS at head 8b414ae; REJECTED: deprecated non-DSpark arm); $SHORT; $ATT"
sweep 2700 32424103771 1 349aa162879bdae1c39ca71282f5f555c8aa2946 success "GSM8K=0.9621..0.9735" \
  "$VERDICT PASS 2026-08-21 on $PULL/2700 (head 349aa16); $SHORT; $ATT"
