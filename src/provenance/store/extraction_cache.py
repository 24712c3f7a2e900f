"""A local cache of InferenceX extractions, outside the committed ledger.

An extraction at one commit is a pure function of its inputs: the commit (which
fixes the tree and the whole first-parent history behind it), the model prefix,
the config-key filter, the PR number (``--pr`` mode) and the extractor's own
code. :func:`cache_key` digests exactly those, the code as
:func:`extractor_version` — the SHA-256 of the source of every ``provenance``
module the extractor imports, directly or not (found statically, so the set
does not depend on what else the process imported), plus the Python, pydantic
and PyYAML versions. Changing any of that code changes every key: a stale entry
is never read again.

Where: ``$PROVENANCE_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/provenance``,
else ``~/.cache/provenance``; entries live under ``inferencex/<2 hex>/<key>.json``.
The ``ingest inferencex`` options ``--cache-dir`` and ``--no-cache`` relocate or
disable it. Deleting the directory is always safe.

The cache is local data, not evidence: an entry is read back through the
caller's pydantic model (``extra="forbid"``) and its own key must match its
file name; anything that does not check out is reported as a warning and
ignored (the extraction runs again and replaces it). Writes are atomic
(:func:`provenance.store.atomic.atomic_write_bytes`) and a write that fails
(read-only or full disk) only costs the cache, never the ingest.
"""

from __future__ import annotations

import ast
import hashlib
import json
import platform
import re
from functools import cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from provenance.errors import WriteError
from provenance.store.atomic import atomic_write_bytes

#: Bumped when the layout of a cache entry changes (also part of every key).
CACHE_FORMAT = "provenance.inferencex-extraction-cache/v1"
#: The module whose import closure is the extractor.
EXTRACTOR_MODULE = "provenance.evidence.inferencex.ingest"
_KEY = re.compile(r"^[0-9a-f]{64}$")

M = TypeVar("M", bound=BaseModel)


# --- the extractor's version ------------------------------------------------------------


def _module_path(root: Path, package: str, name: str) -> Path | None:
    """The source file of module ``name`` inside ``package`` rooted at ``root``, if any."""
    if name != package and not name.startswith(package + "."):
        return None
    parts = name.split(".")[1:]
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(tree: ast.Module, current: str, is_package: bool) -> set[str]:
    """Every module name an import statement anywhere in ``tree`` may load."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = current.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def source_closure(root: Path, package: str, module: str) -> dict[str, Path]:
    """Module name → source file of ``module`` and every module of ``package`` it imports.

    Static (``ast``): imports inside functions count, and so do the
    ``__init__`` modules of every package on the way.
    """
    found: dict[str, Path] = {}
    pending = [module]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        path = _module_path(root, package, name)
        if path is None:
            continue
        found[name] = path
        parent = name.rpartition(".")[0]
        if parent:
            pending.append(parent)
        tree = ast.parse(path.read_bytes(), filename=str(path))
        pending.extend(_imported_names(tree, name, path.name == "__init__.py"))
    return found


def source_digest(root: Path, package: str, module: str) -> str:
    """SHA-256 over the names and bytes of :func:`source_closure`'s files."""
    digest = hashlib.sha256()
    for name, path in sorted(source_closure(root, package, module).items()):
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


@cache
def extractor_version() -> str:
    """The extractor's version: its source closure and the libraries that shape its output."""
    import pydantic
    import yaml

    import provenance

    root = Path(provenance.__file__).parent
    parts = [
        CACHE_FORMAT,
        source_digest(root, "provenance", EXTRACTOR_MODULE),
        f"python {platform.python_version()}",
        f"pydantic {pydantic.VERSION}",
        f"pyyaml {yaml.__version__}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cache_key(**inputs: str | int | None) -> str:
    """The digest of an extraction's inputs (and :func:`extractor_version`)."""
    payload = {"format": CACHE_FORMAT, "extractor": extractor_version(), **inputs}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


# --- the store --------------------------------------------------------------------------


class ExtractionCache:
    """Cache entries under ``root/inferencex``; problems become :attr:`warnings`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.warnings: list[str] = []
        self.hits = 0
        self.misses = 0

    def path_of(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / "inferencex" / key[:2] / f"{key}.json"

    def load(self, key: str, model: type[M]) -> M | None:
        """The entry stored under ``key`` validated as ``model``; None when absent or unusable.

        ``model`` must have a ``key`` field: an entry whose key is not its file's is unusable.
        """
        path = self.path_of(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError as exc:
            self._unusable(path, f"unreadable ({exc.strerror or exc})")
            return None
        try:
            value = model.model_validate_json(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            self._unusable(path, f"invalid ({where}: {first['msg']})")
            return None
        if getattr(value, "key", None) != key:
            self._unusable(path, "its key does not match its file name")
            return None
        self.hits += 1
        return value

    def reject(self, key: str, reason: str) -> None:
        """The caller found ``key``'s entry inconsistent: count it as unusable."""
        self.hits -= 1
        self._unusable(self.path_of(key), reason)

    def _unusable(self, path: Path, reason: str) -> None:
        self.misses += 1
        self.warnings.append(f"extraction cache: {path}: {reason}; ignored, extracting again")

    def store(self, key: str, value: BaseModel) -> None:
        """Write ``value`` under ``key`` atomically; a failure is a warning, not an error."""
        path = self.path_of(key)
        data = value.model_dump_json(by_alias=True).encode("utf-8")
        try:
            atomic_write_bytes(path, data)
        except (OSError, WriteError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else exc.message
            self.warnings.append(f"extraction cache: cannot write {path} ({reason}); not cached")
