"""The static evaluator of the workflow's SCENARIO_SUBDIR expression."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provenance.evidence.inferencex.workflow_env import NotEvaluableError, evaluate

#: The two forms InferenceX's benchmark-tmpl.yml has had (before and after 2026-07-02).
BEFORE = "${{ inputs.scenario-type == 'agentic-coding' && 'agentic/' || '' }}"
AFTER = "${{ inputs.scenario-type == 'agentic-coding' && 'agentic/' || 'fixed_seq_len/' }}"


@pytest.mark.parametrize(
    ("text", "scenario", "expected"),
    [
        (BEFORE, "fixed-seq-len", ("",)),
        (BEFORE, "agentic-coding", ("agentic/",)),
        (AFTER, "fixed-seq-len", ("fixed_seq_len/",)),
        (AFTER, "agentic-coding", ("agentic/",)),
        (AFTER, "AGENTIC-CODING", ("agentic/",)),  # GitHub compares strings case-insensitively
        ("plain/", "fixed-seq-len", ("plain/",)),
        ("${{ !(inputs.scenario-type != 'x') }}", "x", ("true",)),
        ("${{ 'it''s' }}", "x", ("it's",)),
        ("${{ null || 3 }}", "x", ("3",)),
    ],
)
def test_known_expressions(text: str, scenario: str, expected: tuple[str, ...]) -> None:
    assert evaluate(text, {"scenario-type": scenario}) == expected


def test_an_unknown_input_yields_every_value_it_can() -> None:
    text = "${{ inputs.layout == 'new' && 'fixed_seq_len/' || '' }}"
    assert evaluate(text, {"scenario-type": "fixed-seq-len"}) == ("fixed_seq_len/", "")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("${{ inputs.subdir }}", "an input the caller passes"),
        ("${{ format('{0}/', inputs.scenario-type) }}", "function format() is not modelled"),
        ("${{ vars.X || '' }}", "context 'vars.X' is not modelled"),
        ("a/${{ inputs.scenario-type }}", "inside a longer string"),
        ("${{ (inputs.scenario-type }}", "expression ends early"),
        ("${{ 'a' 'b' }}", "unexpected"),
        ("${{ 1 == '1' }}", "type coercion"),
        ("${{ 'a' ~ 'b' }}", "cannot read"),
    ],
)
def test_what_is_not_modelled_is_refused(text: str, why: str) -> None:
    with pytest.raises(NotEvaluableError, match=re.escape(why)):
        evaluate(text, {"scenario-type": "fixed-seq-len"})


_literal = st.text(alphabet=st.characters(blacklist_characters="'\x00"), max_size=8)


@given(a=_literal, b=_literal, scenario=_literal, other=_literal)
def test_the_conditional_form_is_a_ternary(a: str, b: str, scenario: str, other: str) -> None:
    """``cond && a || b`` is ``a`` when cond holds and ``a`` is non-empty, else ``b``."""
    text = f"${{{{ inputs.scenario-type == '{other}' && '{a}' || '{b}' }}}}"
    holds = scenario.casefold() == other.casefold()
    expected = a if holds and a else b
    assert evaluate(text, {"scenario-type": scenario}) == (expected,)


@given(text=st.text(max_size=40))
def test_any_text_evaluates_or_is_refused(text: str) -> None:
    try:
        values = evaluate("${{" + text + "}}", {"scenario-type": "fixed-seq-len"})
    except NotEvaluableError:
        return
    assert values and all(isinstance(v, str) for v in values)
