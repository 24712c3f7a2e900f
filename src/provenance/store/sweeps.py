"""Recording a sweep run by hand (``provenance ledger add-sweep``).

For facts that only exist in review threads: a sweep run id, attempt, head SHA
and conclusion, with optional eval score ranges. The sweep is added to the
PR's ledger entry (created when absent) under the writer lock, atomically.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provenance.errors import UsageError
from provenance.model.ledger import EvalScore, LedgerEntry, PrRef, SweepRun
from provenance.store.ledger import Ledger
from provenance.store.lock import writer_lock

_EVAL = re.compile(r"^(?P<name>[^=\s][^=]*)=(?P<low>[^.][^=]*?)(?:\.\.(?P<high>[^=]+))?$")


class AddSweepResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pr: str
    path: str
    created_entry: bool
    changed: bool


def parse_eval(text: str, source: str) -> EvalScore:
    """``NAME=LOW..HIGH`` (or ``NAME=VALUE``) → EvalScore; UsageError when malformed."""
    match = _EVAL.match(text.strip())
    if not match:
        raise UsageError(f"--eval {text!r}: expected NAME=LOW..HIGH (e.g. gsm8k=0.91..0.93)")
    try:
        low = float(match["low"])
        high = float(match["high"]) if match["high"] is not None else low
    except ValueError:
        raise UsageError(f"--eval {text!r}: LOW and HIGH must be numbers") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise UsageError(f"--eval {text!r}: LOW and HIGH must be finite numbers")
    if low > high:
        raise UsageError(f"--eval {text!r}: LOW is greater than HIGH")
    return EvalScore(name=match["name"].strip(), low=low, high=high, source=source)


def add_sweep(
    ledger_root: Path, pr: PrRef, sweep: SweepRun, *, lock_timeout: float = 10.0
) -> AddSweepResult:
    """Add ``sweep`` to ``pr``'s entry. Idempotent; a conflicting record of the same run fails.

    A run (run id, attempt) already recorded with other facts is a UsageError:
    the ledger never silently replaces a recorded fact; edit the file by hand.
    """
    ledger = Ledger(ledger_root)
    with writer_lock(ledger_root, timeout=lock_timeout):
        existing = ledger.entry(pr)
        entry = existing or LedgerEntry(pr=pr)
        for known in entry.sweeps:
            if (known.run_id, known.attempt) == (sweep.run_id, sweep.attempt):
                same = known.model_copy(update={"recorded": sweep.recorded}) == sweep
                if same:
                    return AddSweepResult(
                        pr=str(pr), path=str(ledger.path_of(pr)), created_entry=False, changed=False
                    )
                raise UsageError(
                    f"{pr} already records run {sweep.run_id} attempt {sweep.attempt} "
                    "with different facts",
                    hint=f"edit {ledger.path_of(pr)} by hand if the recorded facts are wrong",
                )
        updated = entry.model_copy(
            update={
                "sweeps": (*entry.sweeps, sweep),
                "sources": tuple(dict.fromkeys((*entry.sources, sweep.source))),
            }
        )
        changed = ledger.write_entry(updated)
    return AddSweepResult(
        pr=str(pr), path=str(ledger.path_of(pr)), created_entry=existing is None, changed=changed
    )
