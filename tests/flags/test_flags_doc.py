"""docs/flags.md lists every default policy rule with its class."""

from __future__ import annotations

from pathlib import Path

from provenance.model.flags import FlagClass
from provenance.normalise.policy import DEFAULT_RULES

DOC = Path(__file__).resolve().parents[2] / "docs" / "flags.md"


def test_every_default_rule_is_documented_under_its_class() -> None:
    text = DOC.read_text(encoding="utf-8")
    sections = {
        cls: text.split(f"\n### {cls.value}\n", 1)[-1].split("\n### ", 1)[0] for cls in FlagClass
    }
    for rule in DEFAULT_RULES:
        assert f"| `{rule.pattern}` | {rule.basis} |" in sections[rule.flag_class], rule.pattern


def test_every_alias_context_rule_and_compared_default_is_documented() -> None:
    from provenance.normalise.aliases import DEFAULT_ALIASES
    from provenance.normalise.context import DEFAULT_CONTEXT_RULES
    from provenance.normalise.policy import COMPARED_DEFAULTS

    text = DOC.read_text(encoding="utf-8")
    for alias in DEFAULT_ALIASES:
        spellings = ", ".join(f"`{s}`" for s in alias.spellings)
        assert f"| `{alias.canonical}` | {spellings} | {alias.basis} |" in text, alias.canonical
    for rule in DEFAULT_CONTEXT_RULES:
        row = f"| `{rule.id}` | `{rule.pattern}` | {rule.describe()} | {rule.basis} |"
        assert row in text, rule.id
    for key, value in COMPARED_DEFAULTS.items():
        assert f"| `{key}` | `{value}` |" in text, key
