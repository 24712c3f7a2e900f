"""What ``provenance flags`` shows: canonical flags of a command or srt-slurm recipe, classified.

Core of the CLI command (pure apart from reading the one YAML file named):
:func:`show_argv` for an argv, :func:`show_srt_slurm` for an srt-slurm recipe
YAML (``backend.vllm_config.<role>`` with ``backend.<role>_environment``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from provenance.errors import InputError, SourceLocation
from provenance.model.flags import FlagClass
from provenance.model.scope import EVIDENCE_ROLE
from provenance.normalise.canonical import (
    ConfigMerge,
    NormalisedCommand,
    normalise_argv,
    normalise_mapping_command,
    render_command,
)
from provenance.normalise.policy import Policy, PolicyRule
from provenance.safe_yaml import LoadedYaml, load_yaml

__all__ = [
    "FlagRow",
    "FlagsView",
    "PolicyView",
    "RoleView",
    "show_argv",
    "show_policy",
    "show_srt_slurm",
]

SCHEMA = "provenance.flags/v1"


class FlagRow(BaseModel):
    """One canonical flag with its policy class and the basis of that class."""

    model_config = ConfigDict(frozen=True)

    key: str
    value: str
    flag_class: FlagClass = Field(serialization_alias="class")
    basis: str


class RoleView(BaseModel):
    """One role's command in canonical form."""

    model_config = ConfigDict(frozen=True)

    role: str | None
    model: str | None
    served_model_name: str | None
    host: str | None
    port: str | None
    flags: list[FlagRow]
    argv: list[str]
    notes: list[str] = []


class FlagsView(BaseModel):
    """The output of ``provenance flags`` (``--format json``)."""

    model_config = ConfigDict(frozen=True)

    schema_: Literal["provenance.flags/v1"] = Field(
        default="provenance.flags/v1", serialization_alias="schema"
    )
    source: str | None = None
    merge: ConfigMerge = ConfigMerge.VLLM
    policy: str = "default"
    roles: list[RoleView]


def _role_view(role: str | None, command: NormalisedCommand, policy: Policy) -> RoleView:
    rows = [
        FlagRow(key=key, value=value, flag_class=policy.classify(key), basis=policy.basis(key))
        for key, value in command.flags.items()
    ]
    return RoleView(
        role=role,
        model=command.model,
        served_model_name=command.served_model_name,
        host=command.host,
        port=command.port,
        flags=rows,
        argv=render_command(command),
        notes=[*command.notes, *_policy_notes(role, command, policy)],
    )


def _policy_notes(role: str | None, command: NormalisedCommand, policy: Policy) -> list[str]:
    """What the policy's aliases and context rules do to this command's major flags."""
    major = policy.major(command.flags)
    evidence_role = EVIDENCE_ROLE.get(role or "", role)
    notes = []
    for key in major:
        alias = policy.aliases.rule_of(key)
        if alias is not None:
            notes.append(f"{key} is a spelling of {alias.canonical}: compared as that key")
        rule = policy.inert_rule(key, evidence_role, major)
        if rule is not None:
            notes.append(
                f"{key} is inert {rule.describe()} (context rule {rule.id}): it needs no evidence"
            )
    notes += [
        f"{canonical} is written twice with different values: both spellings are compared"
        for canonical in policy.aliases.conflicts(major)
    ]
    return notes


def show_argv(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    role: str | None,
    policy: Policy,
    merge: ConfigMerge = ConfigMerge.VLLM,
) -> FlagsView:
    """Canonical, classified flags of one ``vllm serve`` argv."""
    command = normalise_argv(argv, env, merge=merge)
    return FlagsView(merge=merge, policy=policy.origin, roles=[_role_view(role, command, policy)])


def _locate(error: InputError, loaded: LoadedYaml) -> InputError:
    """Add the line number to an error raised with a key path inside ``loaded``."""
    location = error.location
    if location is None or location.key_path is None or location.line is not None:
        return error
    line = loaded.line_of(tuple(location.key_path.split(".")))
    error.location = SourceLocation(location.path, line=line, key_path=location.key_path)
    return error


def show_srt_slurm(
    path: Path,
    *,
    role: str | None,
    policy: Policy,
    merge: ConfigMerge = ConfigMerge.VLLM,
) -> FlagsView:
    """Canonical, classified flags of an srt-slurm recipe YAML, one view per role."""
    loaded = load_yaml(path)
    source = str(path)

    def fail(message: str, key_path: tuple[str, ...], hint: str | None = None) -> InputError:
        return InputError(message, location=loaded.location(key_path), hint=hint)

    data = loaded.data
    backend = data.get("backend") if isinstance(data, dict) else None
    if not isinstance(backend, dict):
        raise fail("no `backend` mapping: not an srt-slurm recipe", ())
    configs = backend.get("vllm_config")
    if not isinstance(configs, dict) or not configs:
        raise fail("no `backend.vllm_config` mapping of roles", ("backend",))
    roles = [str(name) for name in configs]
    if role is not None:
        if role not in configs:
            raise fail(
                f"role {role!r} not in backend.vllm_config",
                ("backend", "vllm_config"),
                hint="roles here: " + ", ".join(roles),
            )
        roles = [role]
    views: list[RoleView] = []
    for name in roles:
        env_key = f"{name}_environment"
        env = backend.get(env_key) or {}
        if not isinstance(env, dict):
            raise fail(f"`{env_key}` must be a mapping", ("backend", env_key))
        config = configs[name]
        if not isinstance(config, dict):
            raise fail(f"vllm_config.{name} must be a mapping", ("backend", "vllm_config", name))
        try:
            command = normalise_mapping_command(
                config,
                env,
                merge=merge,
                source=source,
                key_prefix=f"backend.vllm_config.{name}",
            )
        except InputError as exc:
            raise _locate(exc, loaded) from None
        views.append(_role_view(name, command, policy))
    return FlagsView(source=source, merge=merge, policy=policy.origin, roles=views)


class PolicyView(BaseModel):
    """The effective policy: override rules first, then the defaults (``--policy``)."""

    model_config = ConfigDict(frozen=True)

    schema_: Literal["provenance.policy/v1"] = Field(
        default="provenance.policy/v1", serialization_alias="schema"
    )
    policy: str
    unknown_keys: FlagClass = FlagClass.MAJOR
    rules: list[PolicyRule]


def show_policy(policy: Policy) -> PolicyView:
    """Every rule of ``policy`` in the order they are tried."""
    return PolicyView(policy=policy.origin, rules=[*policy.overrides, *policy.rules])
