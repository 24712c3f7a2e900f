"""Why an InferenceX evidence point yields no record: one code per specific reason.

Every skip of :mod:`provenance.evidence.inferencex.ingest` names a
:data:`SkipCode`; :data:`SKIP_MESSAGES` holds each code's message template
(``{framework}``: the config entry's framework). The ingest summary counts
skips per code and framework, with the config keys they hit
(:class:`SkipCount`). ``docs/evidence.md`` lists every code; a test checks it.

Summaries written before the codes existed (``skipped: {message: count}``)
still load: :func:`legacy_code` maps each old message to its code.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

SkipCode = Literal[
    "launcher-not-found",
    "scenario-subdir-unknown",
    "argv-not-normalisable",
    "launcher-not-evaluable",
    "no-vllm-engine",
    "multinode-without-config-file",
    "amd-disagg-python-eval",
    "llmd-recipe-not-evaluated",
    "llmd-recipe-not-in-tree",
    "recipe-not-in-tree",
    "recipe-deleted",
    "recipe-not-vllm",
    "recipe-unreadable",
    "archived-launcher-changed",
]

SKIP_CODES: tuple[SkipCode, ...] = get_args(SkipCode)

SKIP_MESSAGES: dict[SkipCode, str] = {
    "launcher-not-found": (
        "launcher script not found: no path the runner launcher composes exists at the commit "
        "(each unresolved_scripts line names the commit and every path looked for)"
    ),
    "scenario-subdir-unknown": (
        "SCENARIO_SUBDIR of benchmark-tmpl.yml not known statically at the commit (the "
        "unresolved_scripts line names the commit and why)"
    ),
    "argv-not-normalisable": "served argv not normalisable",
    "launcher-not-evaluable": "launcher could not be evaluated",
    "no-vllm-engine": "launcher serves no vLLM engine (framework {framework})",
    "multinode-without-config-file": (
        "multinode point without CONFIG_FILE (framework {framework})"
    ),
    "amd-disagg-python-eval": (
        "AMD vllm-disagg launcher chain not in the form amd_disagg.py reimplements (its "
        'models_vllm.yaml eval "$(python3 ...)" is never run; a warning names the file and '
        "the missing step)"
    ),
    "llmd-recipe-not-evaluated": (
        "llm-d recipe is in the tree but its server.sh composition is not evaluated"
    ),
    "llmd-recipe-not-in-tree": "llm-d recipe not in the InferenceX tree",
    "recipe-not-in-tree": (
        "srt-slurm recipe not in the InferenceX tree: CONFIG_FILE recipes/<rest> looked up as "
        "benchmarks/multi_node/srt-slurm-recipes/<rest>, absent at this commit and at every "
        "earlier commit of its first-parent history (upstream srt-slurm recipe)"
    ),
    "recipe-deleted": (
        "srt-slurm recipe deleted from the InferenceX tree: CONFIG_FILE recipes/<rest> looked "
        "up as benchmarks/multi_node/srt-slurm-recipes/<rest>, removed by an earlier commit "
        "(a warning names the path and the removing commit)"
    ),
    "recipe-not-vllm": "srt-slurm recipe is not a vLLM recipe",
    "recipe-unreadable": "srt-slurm recipe unreadable",
    "archived-launcher-changed": (
        "archived config entry: its launcher now serves other content (never swept so)"
    ),
}


#: One ``unresolved_scripts`` line: a single-node point whose launcher was not found.
UNRESOLVED_SCRIPT = "{key} ({scenario}, spec-decoding {spec}) at {commit}: {why}"


def unresolved_script(key: str, scenario: str, spec: str, commit: str, why: str) -> str:
    """The ``unresolved_scripts`` line of a point (``why`` names the paths looked for)."""
    return UNRESOLVED_SCRIPT.format(
        key=key, scenario=scenario, spec=spec, commit=commit[:12], why=why
    )


def skip_message(code: SkipCode, framework: str) -> str:
    """The human message of ``code`` for an entry of ``framework``."""
    return SKIP_MESSAGES[code].format(framework=framework)


def _legacy_pattern(template: str) -> re.Pattern[str]:
    head, sep, tail = template.partition("{framework}")
    if not sep:
        return re.compile(re.escape(head) + r"$")
    return re.compile(re.escape(head) + r"(?P<framework>.*)" + re.escape(tail) + r"$")


_LEGACY = [(code, _legacy_pattern(text)) for code, text in SKIP_MESSAGES.items()]
#: Messages of earlier versions of a code (its current message is matched too).
_OLD_MESSAGES: dict[str, SkipCode] = {
    "launcher script not found": "launcher-not-found",
    "AMD vllm-disagg launcher takes its serve flags from models_vllm.yaml through "
    'eval "$(python3 ...)" (not evaluated statically)': "amd-disagg-python-eval",
    "srt-slurm recipe not in the InferenceX tree (upstream srt-slurm recipe)": (
        "recipe-not-in-tree"
    ),
}


def legacy_code(message: str) -> tuple[SkipCode, str]:
    """The code and framework of a skip message written before codes existed.

    Raises ValueError for a message no code ever produced.
    """
    if message in _OLD_MESSAGES:
        return _OLD_MESSAGES[message], ""
    for code, pattern in _LEGACY:
        match = pattern.match(message)
        if match:
            return code, match.groupdict().get("framework") or ""
    raise ValueError(f"unknown skip reason {message!r}")


class SkipCount(BaseModel):
    """How many points of ``framework`` were skipped for ``code``, and in which keys."""

    model_config = ConfigDict(extra="forbid")

    code: SkipCode
    framework: str
    count: int
    #: Config keys with a point skipped so (sorted; empty in legacy summaries).
    keys: list[str]
    #: :func:`skip_message` of ``code`` (recomputed on load, never trusted).
    message: str = ""

    @model_validator(mode="before")
    @classmethod
    def _with_message(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("code") in SKIP_CODES:
            data = {**data, "message": skip_message(data["code"], str(data.get("framework", "")))}
        return data


def legacy_skips(value: Any) -> Any:
    """``skipped`` as a list of :class:`SkipCount` data, converting the old message dict."""
    if not isinstance(value, dict):
        return value
    result = []
    for message, count in value.items():
        code, framework = legacy_code(str(message))
        result.append({"code": code, "framework": framework, "count": count, "keys": []})
    return result
