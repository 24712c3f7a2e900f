"""Load a recipes root (taxonomy, strategies, kv_store) and model recipes from disk.

A *recipes root* is a directory laid out like vllm-project/recipes:
``taxonomy.yaml``, ``strategies/*.yaml``, optionally ``kv_store/*.yaml`` (a root
without that folder has no Mooncake topologies) and ``models/<org>/<name>.yaml``.
All YAML goes through :mod:`provenance.safe_yaml`; every schema violation is an
:class:`~provenance.errors.InputError` naming ``file:line (key.path)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from provenance.errors import InputError, SourceLocation, UnsafeInputError
from provenance.recipes.load.schema import KvStore, RecipeFile, Strategy, Taxonomy
from provenance.recipes.load.yaml12 import check_yaml12_nodes
from provenance.safe_yaml import LoadedYaml, format_key_path, load_yaml

M = TypeVar("M", bound=BaseModel)

# Limits on one model recipe (docs/security.md, "Faults and limits"). A recipes PR
# controls these counts, and the audit walks their product: without a bound, 10,000
# variants took 62 s. Each limit is far above every real recipe — measured on the 173
# recipes of vllm-project/recipes at 8959cf6 and on all 916 model-file revisions in
# its history (the maxima are the same). To raise one, change it here (and the
# measured figures in docs/security.md). The cross-product's own limit is
# ``provenance.recipes.enumerate.selections.MAX_COMBINATIONS``.

#: Bytes of one model recipe file; largest real: 58,448 (MiniMaxAI/MiniMax-H3).
MAX_RECIPE_BYTES = 512 * 1024
#: Variants of one recipe; largest real: 5.
MAX_VARIANTS = 64
#: Features of one recipe; largest real: 6.
MAX_FEATURES = 64
#: Modes of one feature; largest real: 3.
MAX_MODES = 32

_KINDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "date_type": "a date",
    "none_required": "null",
    "literal_error": "one of the allowed values",
}


def _yaml_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _step(node: object, part: object) -> tuple[str | int, object] | None:
    if isinstance(node, dict) and isinstance(part, str) and part in node:
        return part, node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return part, node[part]
    return None


def _data_path(
    data: object, loc: Sequence[object], *, missing: bool
) -> tuple[tuple[str | int, ...], object]:
    """The error location as a path through the YAML data (pydantic's union tags dropped)."""
    path: list[str | int] = []
    node = data
    last = len(loc) - 1
    for index, part in enumerate(loc):
        step = _step(node, part)
        if step is not None:
            path.append(step[0])
            node = step[1]
        elif missing and index == last and isinstance(part, str) and isinstance(node, dict):
            path.append(part)
            node = None
    return tuple(path), node


def validate_yaml(model: type[M], loaded: LoadedYaml) -> M:
    """Validate a loaded YAML document; the first error becomes an :class:`InputError`.

    The message names ``file:line (key.path)`` with the key path as written in
    the YAML, and says what type was expected and what was found.
    """
    try:
        return model.model_validate(loaded.data)
    except ValidationError as exc:
        errors = exc.errors()
        placed = [
            (_data_path(loaded.data, e["loc"], missing=e["type"] == "missing"), e) for e in errors
        ]
        # The most specific place wins (a union reports one error per member type).
        (path, value), first = max(placed, key=lambda item: len(item[0][0]))
        same_place = [e for (p, _), e in placed if p == path]
        kind = first["type"]
        if kind == "extra_forbidden":
            message = "unknown key"
        elif kind == "missing":
            message = "required key is missing"
        elif kind == "literal_error":
            message = f"{first['msg']}, got {value!r}"
        else:
            wanted = sorted({_KINDS.get(e["type"], e["msg"]) for e in same_place})
            message = f"expected {' or '.join(wanted)}, got {_yaml_kind(value)}"
        others = len(errors) - len(same_place)
        if others:
            message += f" (and {others} more error(s))"
        location = loaded.location(path)
        raise InputError(message, location=location) from None


@dataclass(frozen=True, eq=False)
class RecipesRoot:
    """Everything a render needs besides the model recipe, loaded from one checkout."""

    path: Path
    taxonomy: Taxonomy
    strategies: dict[str, Strategy] = field(default_factory=dict)
    kv_store: dict[str, KvStore] = field(default_factory=dict)

    def deploy_type(self, name: str) -> str | None:
        """``deploy_type`` of a strategy or kv_store topology (None if unknown or unset)."""
        strategy = self.strategies.get(name)
        if strategy is not None and name not in self.kv_store:
            return strategy.deploy_type
        store = self.kv_store.get(name)
        return store.deploy_type if store is not None else None


@dataclass(frozen=True, eq=False)
class Recipe:
    """One model recipe: its identity (``Org/Name``), where it came from and its content."""

    hf_id: str
    path: Path
    spec: RecipeFile
    #: the line of each key path in the file, so later stages name ``file:line``
    lines: Mapping[tuple[str | int, ...], int] = field(default_factory=dict, repr=False)

    def location(self, key_path: Sequence[str | int]) -> SourceLocation:
        """Where ``key_path`` (or its nearest ancestor with a line) is written."""
        parts = tuple(key_path)
        line = None
        for end in range(len(parts), -1, -1):
            line = self.lines.get(parts[:end])
            if line is not None:
                break
        return SourceLocation(str(self.path), line=line, key_path=format_key_path(parts) or None)


def _refuse_escaping_symlink(root: Path, path: Path, shown: str) -> None:
    """A file under the recipes root must resolve under it: a checkout (a PR's content)
    may hold symlinks to anywhere on the machine. A path named outside the root is the
    caller's own choice and is left alone."""
    try:
        path.absolute().relative_to(root.absolute())
    except ValueError:
        return
    if not _resolved(path, shown).is_relative_to(_resolved(root, str(root))):
        raise UnsafeInputError(
            "resolves outside the recipes root (a symlink?); refusing to follow it", path=shown
        )


def _resolved(path: Path, shown: str) -> Path:
    """``path.resolve()``; a symlink loop or an unusable name is an InputError naming it."""
    try:
        return path.resolve()
    except RuntimeError:  # Python < 3.13: "Symlink loop from ..."
        raise InputError("symlink loop; cannot resolve the path", path=shown) from None
    except OSError as exc:
        raise InputError(f"cannot resolve the path: {exc.strerror}", path=shown) from None


def _listed(path: Path) -> bool:
    """A name a loader reads: a file, or a symlink (read to fail if broken); False for a
    name the system refuses (too long, NUL, ...), which then fails when read."""
    try:
        return path.is_file() or path.is_symlink()
    except (OSError, ValueError):
        return False


def _load_mapping(path: Path, shown: str, root: Path) -> LoadedYaml:
    _refuse_escaping_symlink(root, path, shown)
    loaded = load_yaml(path, display_path=shown, keep_node=True)
    if not isinstance(loaded.data, dict):
        raise InputError("expected a YAML mapping at the top level", path=shown, line=1)
    # The site parses YAML 1.2; refuse scalars PyYAML (YAML 1.1) would read differently.
    check_yaml12_nodes(loaded.node, shown)
    return loaded


def _named_files(root: Path, folder: str) -> list[Path]:
    directory = root / folder
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == ".yaml" and _listed(p))


def load_recipes_root(root: Path) -> RecipesRoot:
    """Load ``taxonomy.yaml``, ``strategies/*.yaml`` and ``kv_store/*.yaml`` under ``root``."""
    root = Path(root)
    taxonomy_file = root / "taxonomy.yaml"
    if not taxonomy_file.is_file():
        raise InputError(
            "not a recipes root (no taxonomy.yaml)",
            path=str(root),
            hint="pass --recipes-root pointing at a vllm-project/recipes checkout",
        )
    taxonomy = validate_yaml(Taxonomy, _load_mapping(taxonomy_file, str(taxonomy_file), root))
    strategies: dict[str, Strategy] = {}
    for file in _named_files(root, "strategies"):
        strategy = validate_yaml(Strategy, _load_mapping(file, str(file), root))
        strategies[strategy.name] = strategy
    kv_store: dict[str, KvStore] = {}
    for file in _named_files(root, "kv_store"):
        store = validate_yaml(KvStore, _load_mapping(file, str(file), root))
        kv_store[store.name] = store
    if not strategies:
        raise InputError("recipes root has no strategies/*.yaml", path=str(root / "strategies"))
    return RecipesRoot(path=root, taxonomy=taxonomy, strategies=strategies, kv_store=kv_store)


def resolve_recipe_path(root: RecipesRoot, ref: str | Path) -> Path:
    """``Org/Name``, a path relative to the root, or any YAML path → the recipe file."""
    given = Path(ref)
    if given.is_absolute():
        return given
    text = str(ref)
    candidates = [
        root.path / text,
        root.path / "models" / text,
        root.path / "models" / f"{text}.yaml",
        given,
    ]
    for candidate in candidates:
        if _listed(candidate):
            return candidate
    return candidates[2] if not text.endswith((".yaml", ".yml")) else candidates[0]


def recipe_identity(root: RecipesRoot, file: Path, spec: RecipeFile) -> str:
    """``Org/Name`` from the path under ``models/``; else the model id or the file stem."""
    try:
        models = root.path / "models"
        rel = _resolved(file, str(file)).relative_to(_resolved(models, str(models)))
    except ValueError:
        rel = None
    if rel is not None and len(rel.parts) >= 2:
        name = rel.parts[-1]
        for suffix in (".yaml", ".yml"):
            name = name.removesuffix(suffix)
        return f"{rel.parts[0]}/{name}"
    if spec.model is not None and spec.model.model_id:
        return spec.model.model_id
    return file.name.removesuffix(".yaml").removesuffix(".yml")


def _feature_mode_problems(spec: RecipeFile) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """The site's build-time rules for feature modes (the only checks beyond the schema)."""
    features = spec.features or {}
    variants = spec.variants or {}
    for name, feature in features.items():
        if feature.modes is None:
            continue
        here: tuple[str | int, ...] = ("features", name)
        if not feature.modes:
            yield (*here, "modes"), "modes must be a non-empty mapping"
            continue
        if feature.args is not None:
            yield here, "a feature cannot declare both args and modes"
        if feature.default_mode and feature.default_mode not in feature.modes:
            yield (*here, "default_mode"), f"unknown mode {feature.default_mode!r}"
        for mode_name, mode in feature.modes.items():
            if mode.args is None:
                yield (*here, "modes", mode_name), "every mode needs an args list"
            for variant in mode.variants or []:
                if variant not in variants:
                    yield (*here, "modes", mode_name, "variants"), f"unknown variant {variant!r}"
        for variant in variants:
            if not any(not m.variants or variant in m.variants for m in feature.modes.values()):
                yield (*here, "modes"), f"no mode is available for variant {variant!r}"
    for variant_name, variant_spec in variants.items():
        for feature_name, mode_name in (variant_spec.default_modes or {}).items():
            here = ("variants", variant_name, "default_modes", feature_name)
            target = features.get(feature_name)
            if target is None:
                yield here, f"unknown feature {feature_name!r}"
            elif target.modes is None:
                yield here, f"feature {feature_name!r} has no modes"
            elif mode_name not in target.modes:
                yield here, f"unknown mode {mode_name!r}"
            elif (allow := target.modes[mode_name].variants) and variant_name not in allow:
                yield here, f"mode {mode_name!r} is not available for variant {variant_name!r}"


def check_recipe_spec(spec: RecipeFile, loaded: LoadedYaml) -> None:
    """The site's build-time rules beyond the schema; the first broken one is an InputError."""
    for key_path, message in _feature_mode_problems(spec):
        raise InputError(message, location=loaded.location(key_path))
    for key_path, args in _arg_lists(loaded.data):
        if (problem := _arg_list_problem(args)) is not None:
            index, message = problem
            where = key_path if index is None else (*key_path, index)
            raise InputError(message, location=loaded.location(where))


#: The keys whose value is a list of ``vllm serve`` arguments, wherever they appear:
#: ``model.base_args``; ``extra_args`` of variants, overrides (recipe, variant, strategy,
#: PD role, omni task) and their hardware overrides; ``vllm_args`` of strategy and PD
#: role overrides; ``args`` of features, modes, their hardware overrides and advanced
#: options.
ARG_LIST_KEYS = frozenset({"args", "base_args", "extra_args", "vllm_args"})


def _arg_lists(data: object) -> Iterator[tuple[tuple[str | int, ...], list[str]]]:
    """Every argument list of a (schema-valid) recipe, with its key path, in file order."""
    stack: list[tuple[tuple[str | int, ...], object]] = [((), data)]
    while stack:
        here, node = stack.pop()
        children: list[tuple[tuple[str | int, ...], object]] = []
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ARG_LIST_KEYS and isinstance(value, list) and value:
                    if all(isinstance(item, str) for item in value):
                        yield (*here, key), value
                else:
                    children.append(((*here, key), value))
        elif isinstance(node, list):
            children = [((*here, index), item) for index, item in enumerate(node)]
        stack.extend(reversed(children))


def _arg_list_problem(args: list[str]) -> tuple[int | None, str] | None:
    """Why an argument list cannot join a ``vllm serve`` command: a stray positional value
    (vLLM takes one, the model, which a recipe's lists never give) or a malformed option."""
    from provenance.errors import ProvenanceError
    from provenance.normalise.canonical import normalise_argv

    try:
        command = normalise_argv(["vllm", "serve", *args])
    except ProvenanceError as exc:
        return _first_refused(args, exc.message), exc.message
    if command.model is None or any(a.split("=", 1)[0] == "--model" for a in args):
        return None
    index = args.index(command.model) if command.model in args else None
    return index, (
        f"unexpected positional value {command.model!r} in an argument list "
        "(vllm serve takes one positional argument, the model)"
    )


def _first_refused(args: list[str], message: str) -> int | None:
    """The index of the item whose arrival makes ``args`` fail with ``message`` (the
    shortest prefix refused so), so the error names its line; None when none is."""
    from provenance.errors import ProvenanceError
    from provenance.normalise.canonical import normalise_argv

    for end in range(1, len(args) + 1):
        try:
            normalise_argv(["vllm", "serve", *args[:end]])
        except ProvenanceError as exc:
            if exc.message == message:  # (a prefix may stop before an option's value)
                return end - 1
    return None


def load_recipe(root: RecipesRoot, ref: str | Path) -> Recipe:
    """Load and validate one model recipe (see :func:`resolve_recipe_path` for ``ref``)."""
    file = resolve_recipe_path(root, ref)
    _refuse_oversized(file, str(file))
    loaded = _load_mapping(file, str(file), root.path)
    _refuse_too_many(loaded)
    spec = validate_yaml(RecipeFile, loaded)
    check_recipe_spec(spec, loaded)
    return Recipe(hf_id=recipe_identity(root, file, spec), path=file, spec=spec, lines=loaded.lines)


def _refuse_oversized(file: Path, shown: str) -> None:
    """A recipe file over :data:`MAX_RECIPE_BYTES`, refused before it is read (no line:
    the whole file is the problem). Anything that cannot be stat'ed is left to the
    loader, which names it."""
    try:
        size = file.stat().st_size if file.is_file() else 0
    except OSError:
        return
    if size > MAX_RECIPE_BYTES:
        raise InputError(
            f"recipe file is {size} bytes, over the limit of {MAX_RECIPE_BYTES} "
            "(loader.MAX_RECIPE_BYTES; the largest real recipe is 58448)",
            path=shown,
        )


def _refuse_too_many(loaded: LoadedYaml) -> None:
    """More variants, features or modes of one feature than the limits (module top)."""
    data = loaded.data
    counted: list[tuple[tuple[str | int, ...], object, int, str]] = [
        (("variants",), data.get("variants"), MAX_VARIANTS, "variants"),
        (("features",), data.get("features"), MAX_FEATURES, "features"),
    ]
    features = data.get("features")
    if isinstance(features, dict):
        counted += [
            (("features", name, "modes"), feature.get("modes"), MAX_MODES, "modes")
            for name, feature in features.items()
            if isinstance(feature, dict)
        ]
    for key_path, value, limit, what in counted:
        if isinstance(value, dict) and len(value) > limit:
            raise InputError(
                f"{len(value)} {what}, over the limit of {limit} "
                f"(loader.MAX_{what.upper()}; docs/security.md gives the real maxima)",
                location=loaded.location(key_path),
            )
