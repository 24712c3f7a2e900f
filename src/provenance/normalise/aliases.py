"""One spelling per knob: canonical flag keys for knobs that vLLM reads under several names.

vLLM accepts some settings both as an environment variable and as a config key, or
as a shorthand flag and a config key (``--attention-backend`` and
``--attention-config.backend``). The normaliser keeps each spelling as written
(:mod:`provenance.normalise.canonical`); the policy maps every spelling of such a
knob to one canonical key before flags are compared, so ``env:X=cutlass`` on one
side and ``attention_config.x=cutlass`` on the other are one flag with one value.

When a command writes two spellings of one knob with *different* values, which
one vLLM obeys depends on its version; the alias is then not applied and both
keys stay, so the difference shows instead of being decided here.

Each alias carries its basis; ``docs/flags.md`` lists them and the audited
repository may add or drop aliases (``[aliases]`` in ``provenance.toml``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from provenance.model.flags import FlagSet

__all__ = ["DEFAULT_ALIASES", "AliasRule", "AliasTable"]


class AliasRule(BaseModel):
    """Every key of ``spellings`` is another name of ``canonical``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    canonical: str
    spellings: tuple[str, ...]
    basis: str
    origin: str = "default"


DEFAULT_ALIASES: tuple[AliasRule, ...] = (
    AliasRule(
        canonical="attention_config.minimax_m3_msa_decode_backend",
        spellings=("env:VLLM_MINIMAX_M3_MSA_DECODE_BACKEND",),
        basis=(
            "vLLM #50032 added the MiniMax-M3 MSA/CUTLASS decode path behind "
            "VLLM_MINIMAX_M3_MSA_DECODE_BACKEND=cutlass and the attention config; InferenceX "
            "#2462 sets the env variable where #2471/#2483 set attention-config "
            "minimax_m3_msa_decode_backend, on the same image (nightly-5e35a6f4)"
        ),
    ),
    AliasRule(
        canonical="attention_config.backend",
        spellings=("attention_backend",),
        basis=(
            "vLLM docs, design/attention_backends: --attention-backend and "
            "--attention-config.backend are two ways to set one backend (mutually exclusive)"
        ),
    ),
)


class AliasTable:
    """The aliases of one policy, indexed by spelling."""

    __slots__ = ("_canonical_of", "_groups", "rules")

    def __init__(self, rules: Iterable[AliasRule]) -> None:
        by_canonical: dict[str, AliasRule] = {}
        for rule in rules:
            by_canonical[rule.canonical] = rule  # a later rule replaces an earlier one
        self.rules = tuple(r for r in by_canonical.values() if r.spellings)
        self._canonical_of: dict[str, str] = {}
        self._groups: dict[str, tuple[str, ...]] = {}
        for rule in self.rules:
            names = (rule.canonical, *(s for s in rule.spellings if s != rule.canonical))
            self._groups[rule.canonical] = names
            for spelling in names[1:]:
                self._canonical_of[spelling] = rule.canonical

    def __bool__(self) -> bool:
        return bool(self.rules)

    def canonical(self, key: str) -> str:
        """The canonical key of ``key`` (``key`` itself when it is no alias)."""
        return self._canonical_of.get(key, key)

    def rule_of(self, key: str) -> AliasRule | None:
        """The alias rule ``key`` is a spelling of (not for the canonical key itself)."""
        canonical = self._canonical_of.get(key)
        if canonical is None:
            return None
        return next(r for r in self.rules if r.canonical == canonical)

    def apply(self, flags: FlagSet) -> FlagSet:
        """``flags`` with every aliased spelling under its canonical key.

        Spellings of one knob with different values are left as written.
        """
        if not self._canonical_of or self._canonical_of.keys().isdisjoint(flags.keys()):
            return flags
        items = dict(flags.items())
        for canonical, names in self._groups.items():
            present = [name for name in names if name in items]
            if not present or present == [canonical]:
                continue
            values = {items[name] for name in present}
            if len(values) > 1:
                continue
            for name in present:
                del items[name]
            items[canonical] = values.pop()
        return FlagSet.of_strings(items)

    def conflicts(self, flags: Mapping[str, str]) -> list[str]:
        """Knobs ``flags`` writes under several spellings with different values."""
        found = []
        for canonical, names in self._groups.items():
            present = [name for name in names if name in flags]
            if len({flags[name] for name in present}) > 1:
                found.append(canonical)
        return found
