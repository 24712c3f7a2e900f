"""Flags that cannot matter in their context: inert, so they need no evidence there.

A flag's relevance may depend on the role of the process and on the other flags of
the same command. ``--mm-encoder-tp-mode data`` changes how the vision encoder is
sharded, but under ``--language-model-only`` no encoder is loaded; a decode-kernel
choice changes nothing on a prefill-only worker. A :class:`ContextRule` names such
keys (a glob), the roles where they are inert and the flags that make them inert;
when a rule applies to a key of a command, the key is dropped from the command's
major flags on both sides of every comparison (recipe and evidence), exactly as a
``tuning`` flag is.

Rules only ever *remove* keys from the major flags, never add any: a command's
major flags in context are a subset of its major flags, so everything that may drop
a flag before the context is known (an argv unit that yields no major key alone)
stays correct.

Conditions are read on the command's major flags after aliases
(:mod:`provenance.normalise.aliases`). Each rule has an id and its basis; the
audited repository may disable or redefine a rule by id, or add its own
(``[context.<id>]`` in ``provenance.toml``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_CONTEXT_RULES", "ContextRule", "ContextRules"]


class ContextRule(BaseModel):
    """Keys matching ``pattern`` are inert in a command of a role in ``roles`` (any role when
    empty) whose major flags include every ``when`` item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    pattern: str
    roles: tuple[str, ...] = ()
    when: dict[str, str] = Field(default_factory=dict)
    basis: str
    origin: str = "default"
    enabled: bool = True

    def describe(self) -> str:
        """``on prefill``, ``with language_model_only=true``, or both."""
        parts = []
        if self.roles:
            parts.append("on " + "/".join(self.roles))
        if self.when:
            parts.append("with " + ", ".join(f"{k}={v}" for k, v in sorted(self.when.items())))
        return " ".join(parts)


DEFAULT_CONTEXT_RULES: tuple[ContextRule, ...] = (
    ContextRule(
        id="encoder-without-encoder",
        pattern="mm_encoder_*",
        when={"language_model_only": "true"},
        basis=(
            "vLLM --language-model-only does not load the multimodal encoder (the recipe's "
            "text_only feature: 'Skip loading the vision encoder'; spec §7 language_model_only), "
            "so encoder parallelism and encoder attention backends change nothing served"
        ),
    ),
    ContextRule(
        id="decode-kernel-on-prefill",
        pattern="attention_config.minimax_m3_msa_decode_backend",
        roles=("prefill",),
        basis=(
            "vLLM #50032: an MSA/CUTLASS sparse decode path; a pd_cluster prefill worker "
            "(kv_producer) runs no decode step. InferenceX sets it on decode workers only "
            "(#2462: 'VLLM_MINIMAX_M3_MSA_DECODE_BACKEND only in decode_environment'; "
            "#2471, #2473, #2483: decode attention-config)"
        ),
    ),
)


class ContextRules:
    """The enabled context rules of one policy, compiled."""

    __slots__ = ("_compiled", "rules")

    def __init__(self, rules: Iterable[ContextRule]) -> None:
        by_id: dict[str, ContextRule] = {}
        for rule in rules:
            by_id[rule.id] = rule  # a later rule (an override) replaces the default
        self.rules = tuple(by_id.values())
        self._compiled = [
            (re.compile(fnmatch.translate(rule.pattern)), rule)
            for rule in self.rules
            if rule.enabled
        ]

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def inert(self, key: str, role: str | None, flags: Mapping[str, str]) -> ContextRule | None:
        """The rule that makes ``key`` inert in a ``role`` command with major ``flags``."""
        for pattern, rule in self.applying(role, flags):
            if pattern.match(key):
                return rule
        return None

    def applying(
        self, role: str | None, flags: Mapping[str, str]
    ) -> list[tuple[re.Pattern[str], ContextRule]]:
        """The rules (compiled pattern, rule) whose role and ``when`` conditions a ``role``
        command with major ``flags`` meets, in rule order: only their patterns remain to be
        matched against each key (conditions are read once per command, not per key)."""
        return [
            (pattern, rule)
            for pattern, rule in self._compiled
            if not (rule.roles and role not in rule.roles)
            and all(flags.get(k) == v for k, v in rule.when.items())
        ]
