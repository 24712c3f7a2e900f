"""The walk selection by selection: render, normalise, key and tally one selection at a time.

Each process's major FlagSet is memoised on the command's content, so each distinct
role is normalised once; the combination key is memoised on the processes' major
flags. Used for omni recipes, for callers that hand in rendered selections
(:attr:`~provenance.audit.pipeline.RecipeInput.combinations`) and by ``provenance
explain``; the walk by shape cell (:mod:`provenance.audit.walks.cells`) is proven to
give the same report.
"""

from __future__ import annotations

from provenance.audit.judge import Outcome
from provenance.audit.keys import CombinationKey, RawRoles, combination_key
from provenance.audit.normaliser import RoleNormaliser
from provenance.audit.tally import Tally
from provenance.audit.verdicts import SelectionSet
from provenance.model.combination import RenderResult, RoleCommand, Selection
from provenance.model.flags import FlagSet


class SelectionWalk:
    """Keys and tallies rendered selections of one recipe, one at a time."""

    def __init__(self, tally: Tally, normaliser: RoleNormaliser) -> None:
        self.tally = tally
        self.normaliser = normaliser
        self._majors: dict[tuple[object, ...], FlagSet] = {}
        self._keys: dict[tuple[object, ...], CombinationKey] = {}

    # Per process ---------------------------------------------------------
    def role_major(self, command: RoleCommand) -> FlagSet:
        """The major flags of one process (normalised once per distinct argv and env)."""
        key = (command.argv, tuple(command.env.items()))
        major = self._majors.get(key)
        if major is None:
            major = self._majors[key] = self.normaliser.command_major(
                command.argv or (), command.env
            )
        return major

    def key_of(self, selection: Selection, result: RenderResult) -> CombinationKey:
        raw = tuple(
            (command.role, self.role_major(command))
            for command in result.roles
            if command.argv is not None
        )
        return self.key_for(
            result.model_id, selection.hardware, result.deploy_type, selection.node_count, raw
        )

    def key_for(
        self,
        model_id: str,
        hardware: str,
        deploy_type: str,
        node_count: int | None,
        raw: RawRoles,
    ) -> CombinationKey:
        """The combination key of a deployment from its processes' major flags."""
        memo_key = (model_id, hardware, deploy_type, node_count, raw)
        key = self._keys.get(memo_key)
        if key is None:
            key = self._keys[memo_key] = combination_key(
                model_id, hardware, deploy_type, node_count, raw, context=self.normaliser.in_context
            )
        return key

    # Per combination -------------------------------------------------------
    def add(self, selection: Selection, result: RenderResult) -> Outcome:
        tally = self.tally
        key = self.key_of(selection, result)
        state = tally.state(key, result.model_id)
        pd_modes: tuple[str, ...] = ()
        if selection.pd is not None:
            pd_modes = (selection.pd.prefill.parallelism, selection.pd.decode.parallelism)
        declared = tally.declared(selection, state.outcome)
        tally.add_set(state, SelectionSet.of(selection), 1, declared, selection, pd_modes)
        return state.outcome
