#!/usr/bin/env python3
"""Generate the vLLM knowledge table: every ``vllm serve`` flag and every environment
variable vLLM reads, per vLLM version, read statically from the vLLM wheel itself.

Nothing of vLLM is imported or installed: the wheel is opened as a zip and its Python
sources are parsed with :mod:`ast`:

* ``vllm/config/*.py`` (``vllm/config.py`` in old releases): every class-level
  annotated field of every class — the config dataclasses — with its type and default;
* ``vllm/engine/arg_utils.py``: every ``add_argument`` call in an ``add_cli_args``
  function — option strings (the first ``--`` one is the flag, the others its
  aliases), its argument group and, through ``**<x>_kwargs["field"]`` with
  ``<x>_kwargs = get_kwargs(SomeConfig)``, the config class and field it comes from;
* ``vllm/entrypoints/openai/cli_args.py``: the same calls, plus every field of the
  ``*FrontendArgs`` classes, which ``FrontendArgs.add_cli_args`` turns into
  ``--field-name`` (group ``Frontend``);
* ``vllm/envs.py``: every key of ``environment_variables`` with the default its getter
  passes to ``os.getenv`` (or ``env_with_choices`` and friends), and the type its
  ``TYPE_CHECKING`` annotation gives.

One JSON file per version is written (``<version>.json``, one flag or variable a line),
with the wheel's file name and SHA-256 as its provenance, and ``index.json`` listing the
versions and who named them.

Usage (docs/flags.md, "vLLM knowledge"):

    python3 scripts/vllm_knowledge.py --all              # regenerate every version
    python3 scripts/vllm_knowledge.py --version 0.24.0   # add or refresh one version
    python3 scripts/vllm_knowledge.py --wheel vllm-0.24.0-*.whl   # from a wheel at hand

``--all`` and ``--version`` fetch wheels with ``pip download --no-deps vllm==X``
into ``--cache`` (default ``/tmp/vllm-wheels``); ``--all`` takes its versions from the
embedded recipes (``min_vllm_version``, ``vllm/vllm-openai:vX.Y.Z`` image tags) and the
embedded evidence records (``image`` tags naming a vLLM release).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCHEMA = "provenance.vllm-knowledge/v1"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "provenance" / "normalise" / "vllm_data"

ARG_UTILS = "vllm/engine/arg_utils.py"
CLI_ARGS = "vllm/entrypoints/openai/cli_args.py"
ENVS = "vllm/envs.py"
#: Dataclass fields of ``EngineArgs`` that are not configs' own fields.
ENGINE_ARGS = "EngineArgs"

_RELEASE = re.compile(r"^\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?$")
_IMAGE_TAG = re.compile(r"vllm/vllm-openai(?:-rocm)?:v?(\d+\.\d+\.\d+(?:\.post\d+)?)\b")
_ROCM_IMAGE = re.compile(r"_vllm_(\d+\.\d+\.\d+(?:\.post\d+)?)_")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _value(node: ast.expr | None, constants: dict[str, ast.expr] | None = None) -> dict[str, Any]:
    """A default as data: ``{"default": literal}`` when it is a literal (or a module-level
    constant bound to one, in ``constants``), else ``{"default_expr": source}`` (an
    expression vLLM evaluates at run time)."""
    if node is None:
        return {}
    if isinstance(node, ast.Name) and constants and node.id in constants:
        found = _value(constants[node.id])
        if "default" in found:
            return found
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {"default_expr": ast.unparse(node)}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return {"default_expr": ast.unparse(node)}
    return {"default": value}


def _field_default(node: ast.expr | None, constants: dict[str, ast.expr]) -> dict[str, Any]:
    """The default of a dataclass field: ``x: T = v`` or ``x: T = field(default=v)`` or
    ``field(default_factory=f)``; a field without a default has none."""
    if isinstance(node, ast.Call) and _name(node.func) in {"field", "Field"}:
        for keyword in node.keywords:
            if keyword.arg == "default":
                return _value(keyword.value, constants)
            if keyword.arg == "default_factory":
                return {"default_expr": ast.unparse(keyword.value) + "()"}
        return {}
    return _value(node, constants)


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``NAME = value`` and ``NAME: T = value`` bindings."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                found[node.targets[0].id] = node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            found[node.target.id] = node.value
    return found


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


# ---------------------------------------------------------------------------
# Config classes
# ---------------------------------------------------------------------------


def config_classes(sources: dict[str, str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Class name → field name → ``{"type", "default"|"default_expr"}`` for every class
    with class-level annotated fields in the given modules (path → source)."""
    classes: dict[str, dict[str, dict[str, Any]]] = {}
    bases: dict[str, list[str]] = {}
    for source in sources.values():
        tree = ast.parse(source)
        constants = _constants(tree)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            fields: dict[str, dict[str, Any]] = {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    annotation = ast.unparse(item.annotation)
                    if annotation.startswith("ClassVar") or item.target.id.startswith("_"):
                        continue
                    fields[item.target.id] = {
                        "type": annotation,
                        **_field_default(item.value, constants),
                    }
            classes.setdefault(node.name, {}).update(fields)
            bases[node.name] = [_name(b) for b in node.bases]
    # Inherited fields (FrontendArgs extends BaseFrontendArgs): the base's first.
    resolved: dict[str, dict[str, dict[str, Any]]] = {}

    def resolve(name: str, seen: frozenset[str] = frozenset()) -> dict[str, dict[str, Any]]:
        if name in resolved:
            return resolved[name]
        merged: dict[str, dict[str, Any]] = {}
        for base in bases.get(name, []):
            if base in classes and base not in seen:
                merged.update(resolve(base, seen | {name}))
        merged.update(classes.get(name, {}))
        resolved[name] = merged
        return merged

    return {name: resolve(name) for name in classes}


# ---------------------------------------------------------------------------
# CLI arguments
# ---------------------------------------------------------------------------


def _functions(tree: ast.Module, name: str) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            yield node


def _group_title(call: ast.Call) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == "title" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    return None


def cli_arguments(
    source: str, classes: dict[str, dict[str, dict[str, Any]]], functions: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    """Canonical key → flag entry for every ``add_argument`` call with a ``--`` option in
    the named functions of ``source``."""
    tree = ast.parse(source)
    flags: dict[str, dict[str, Any]] = {}
    for function_name in functions:
        for function in _functions(tree, function_name):
            kwargs_of: dict[str, str] = {}  # variable -> config class (get_kwargs(Cls))
            group_of: dict[str, str] = {}  # variable -> argument group title
            picked: dict[str, ast.Subscript] = {}  # x_kwargs = kernel_kwargs["field"]
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                    if isinstance(target, ast.Name) and isinstance(value, ast.Subscript):
                        picked[target.id] = value
                    if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
                        continue
                    called = _name(value.func)
                    if called == "get_kwargs" and value.args:
                        kwargs_of[target.id] = _name(value.args[0])
                    elif called == "add_argument_group":
                        title = _group_title(value)
                        if title is not None:
                            group_of[target.id] = title
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and _name(node.func) == "add_argument":
                    _add_flag(node, kwargs_of, group_of, classes, flags, picked)
    return flags


def _add_flag(
    call: ast.Call,
    kwargs_of: dict[str, str],
    group_of: dict[str, str],
    classes: dict[str, dict[str, dict[str, Any]]],
    flags: dict[str, dict[str, Any]],
    picked: dict[str, ast.Subscript] | None = None,
) -> None:
    options = [
        str(arg.value)
        for arg in call.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    ]
    longs = [o for o in options if o.startswith("--")]
    if not longs:
        return
    flag = longs[0]
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    group = group_of.get(receiver.id) if isinstance(receiver, ast.Name) else None
    entry: dict[str, Any] = {"option": flag}
    aliases = [o for o in options if o != flag]
    config_class = field = None
    keywords = list(call.keywords)
    for keyword in call.keywords:
        if keyword.arg is not None:
            continue
        # **kwargs_var["field"], or **{**kwargs_var["field"], "default": None}
        spreads = [keyword.value]
        if isinstance(keyword.value, ast.Dict):
            spreads = [
                v
                for k, v in zip(keyword.value.keys, keyword.value.values, strict=True)
                if k is None
            ]
            keywords += [
                ast.keyword(arg=str(k.value), value=v)
                for k, v in zip(keyword.value.keys, keyword.value.values, strict=True)
                if isinstance(k, ast.Constant)
            ]
        for spread in spreads:
            # **moe_backend_kwargs, after moe_backend_kwargs = kernel_kwargs["moe_backend"]
            if isinstance(spread, ast.Name) and picked and spread.id in picked:
                spread = picked[spread.id]
            if (
                isinstance(spread, ast.Subscript)
                and isinstance(spread.value, ast.Name)
                and isinstance(spread.slice, ast.Constant)
            ):
                config_class = kwargs_of.get(spread.value.id)
                field = str(spread.slice.value)
    if config_class is not None and field is not None:
        entry["group"] = config_class
        entry["field"] = field
        known = classes.get(config_class, {}).get(field)
        if known is not None:
            entry.update(known)
    else:
        entry["group"] = group or "(no group)"
    for keyword in keywords:
        if keyword.arg == "type":
            entry["type"] = ast.unparse(keyword.value)
        elif keyword.arg == "default":
            entry.pop("default", None)
            entry.pop("default_expr", None)
            entry.update(_value(keyword.value))
        elif keyword.arg == "action":
            entry["action"] = ast.unparse(keyword.value)
    if aliases:
        entry["aliases"] = aliases
    key = flag[2:].replace("-", "_")
    flags[key] = entry


def frontend_flags(classes: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Every field of a ``*FrontendArgs`` class: ``FrontendArgs.add_cli_args`` registers
    each as ``--field-name`` in the group named after the class without ``Args``."""
    flags: dict[str, dict[str, Any]] = {}
    for name in sorted(classes):
        if not name.endswith("FrontendArgs") or name.startswith("Base"):
            continue
        group = name.removesuffix("Args")
        for field, facts in classes[name].items():
            flags[field] = {
                "option": "--" + field.replace("_", "-"),
                "group": group,
                "field": field,
                **facts,
            }
    return flags


# ---------------------------------------------------------------------------
# Environment variables
# ---------------------------------------------------------------------------


def environment(source: str) -> dict[str, dict[str, Any]]:
    """Name → ``{"type", "default"|"default_expr"}`` of every key of
    ``environment_variables`` in ``vllm/envs.py``."""
    tree = ast.parse(source)
    types: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    types[item.target.id] = {
                        "type": ast.unparse(item.annotation),
                        **_value(item.value),
                    }
    table: ast.Dict | None = None
    for node in tree.body:
        target = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target == "environment_variables" and isinstance(value, ast.Dict):
            table = value
    variables: dict[str, dict[str, Any]] = {}
    if table is None:
        return variables
    for key_node, getter in zip(table.keys, table.values, strict=True):
        if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
            continue
        name = key_node.value
        entry: dict[str, Any] = {}
        if name in types:
            entry["type"] = types[name]["type"]
        read = _getenv_default(getter, name)
        if read is not None:
            entry.update(read)
        elif name in types:
            entry.update({k: v for k, v in types[name].items() if k != "type"})
        variables[name] = entry
    return variables


def _getenv_default(getter: ast.expr, name: str) -> dict[str, Any] | None:
    """The default the getter passes with ``name`` (``os.getenv(name, d)``,
    ``os.environ.get(name, d)``, ``env_with_choices(name, d, ...)``); ``{"default":
    None}`` when it reads ``name`` without one; None when no call reads ``name``."""
    for node in ast.walk(getter):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and first.value == name):
            continue
        if len(node.args) > 1:
            return _value(node.args[1])
        for keyword in node.keywords:
            if keyword.arg == "default":
                return _value(keyword.value)
        return {"default": None}
    return None


# ---------------------------------------------------------------------------
# A wheel
# ---------------------------------------------------------------------------


def read_wheel(path: Path) -> dict[str, Any]:
    """The knowledge table of one vLLM wheel (never imported)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())

        def text(name: str) -> str:
            return wheel.read(name).decode("utf-8")

        version = _wheel_version(path, names, text)
        config_sources = {
            n: text(n)
            for n in sorted(names)
            if (n.startswith("vllm/config/") and n.endswith(".py")) or n == "vllm/config.py"
        }
        if ARG_UTILS in names:
            config_sources[ARG_UTILS] = text(ARG_UTILS)
        if CLI_ARGS in names:
            config_sources[CLI_ARGS] = text(CLI_ARGS)
        classes = config_classes(config_sources)
        flags: dict[str, dict[str, Any]] = {}
        if CLI_ARGS in names:
            flags.update(frontend_flags(classes))
            flags.update(
                cli_arguments(text(CLI_ARGS), classes, ("make_arg_parser", "add_cli_args"))
            )
        if ARG_UTILS in names:
            flags.update(cli_arguments(text(ARG_UTILS), classes, ("add_cli_args",)))
        env = environment(text(ENVS)) if ENVS in names else {}
    return {
        "schema": SCHEMA,
        "version": version,
        "wheel": {"file": path.name, "sha256": hashlib.sha256(data).hexdigest()},
        "read": sorted(n for n in (ARG_UTILS, CLI_ARGS, ENVS, *config_sources) if n in names),
        "flags": dict(sorted(flags.items())),
        "env": dict(sorted(env.items())),
    }


def _wheel_version(path: Path, names: set[str], text: Any) -> str:
    for name in sorted(names):
        if name.endswith(".dist-info/METADATA"):
            for line in text(name).splitlines():
                if line.startswith("Version:"):
                    return str(line.split(":", 1)[1].strip())
    parts = path.name.split("-")
    if len(parts) > 1:
        return parts[1]
    raise SystemExit(f"{path}: no version in the wheel's METADATA or file name")


def dump(table: dict[str, Any]) -> str:
    """JSON with one flag or variable a line (small diffs between versions)."""
    lines = ["{"]
    head = {k: v for k, v in table.items() if k not in ("flags", "env")}
    for key, value in head.items():
        lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)},")
    for section in ("flags", "env"):
        entries = table[section]
        lines.append(f"{json.dumps(section)}: {{")
        for number, (key, value) in enumerate(entries.items()):
            comma = "," if number < len(entries) - 1 else ""
            lines.append(f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
        lines.append("}," if section == "flags" else "}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Which versions
# ---------------------------------------------------------------------------


def named_versions(root: Path) -> dict[str, list[str]]:
    """Release version → where it is named: the embedded recipes' ``min_vllm_version``
    and image tags, and the embedded evidence records' images."""
    named: dict[str, set[str]] = {}
    for path in sorted((root / "recipes").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(root))
        for found in re.finditer(r"min_vllm_version:\s*['\"]?([0-9][0-9a-z.]*)", text):
            named.setdefault(found.group(1), set()).add(where)
        for found in _IMAGE_TAG.finditer(text):
            named.setdefault(found.group(1), set()).add(where)
    images: dict[str, int] = {}
    for path in sorted((root / "evidence").rglob("*.json")):
        image = json.loads(path.read_text(encoding="utf-8")).get("image") or ""
        for pattern in (_IMAGE_TAG, _ROCM_IMAGE):
            tag = pattern.search(image)
            if tag is not None:
                images[tag.group(1)] = images.get(tag.group(1), 0) + 1
    for version, count in images.items():
        named.setdefault(version, set()).add(f"evidence/ ({count} record(s))")
    return {v: sorted(named[v]) for v in sorted(named, key=_version_key) if _RELEASE.match(v)}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def download(version: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                f"vllm=={version}",
                "-d",
                str(cache),
                "--quiet",
            ],
            check=True,
        )
        found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip downloaded no wheel of vllm=={version}")
    return found[0]


def write(table: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{table['version']}.json"
    target.write_text(dump(table), encoding="utf-8")
    return target


def write_index(out: Path, named: dict[str, list[str]]) -> None:
    versions = {}
    for path in sorted(out.glob("*.json"), key=lambda p: _version_key(p.stem)):
        if path.name == "index.json":
            continue
        table = json.loads(path.read_text(encoding="utf-8"))
        versions[table["version"]] = {
            "wheel": table["wheel"],
            "flags": len(table["flags"]),
            "env": len(table["env"]),
            "named_by": named.get(table["version"], []),
        }
    index = {"schema": SCHEMA + "-index", "versions": versions}
    text = json.dumps(index, indent=1, sort_keys=False) + "\n"
    (out / "index.json").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", action="append", default=[], type=Path)
    parser.add_argument("--version", action="append", default=[])
    parser.add_argument("--all", action="store_true", help="every version the repo names")
    parser.add_argument("--list", action="store_true", help="print the named versions only")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vllm-wheels"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    named = named_versions(args.root) if (args.all or args.list) else {}
    if args.list:
        for version, where in named.items():
            print(f"{version}\t{'; '.join(where)}")
        return 0
    wheels: list[Path] = list(args.wheel)
    for version in [*args.version, *named]:
        wheels.append(download(version, args.cache))
    if not wheels:
        parser.error("give --wheel, --version or --all")
    for wheel in wheels:
        target = write(read_wheel(wheel), args.out)
        print(f"{wheel.name} -> {target}")
    if not args.all:
        named = named_versions(args.root) if (args.root / "recipes").is_dir() else {}
    write_index(args.out, named)
    return 0


if __name__ == "__main__":
    sys.exit(main())
