"""``vllm serve --config FILE``: splice the config file the launcher writes into argv.

vLLM's argument parser reads the YAML mapping named by ``--config`` and turns
each key into flags, inserted right after ``serve`` (and the positional model,
when there is one) in place of ``--config FILE``; flags given later on the
command line therefore override the file's (argparse: the last one wins). A
key ``k`` becomes:

* ``true`` → ``--k``; ``false`` → nothing (vLLM drops false booleans);
* a list → ``--k item …`` (nothing when empty);
* any other scalar → ``--k str(value)``;
* a mapping → ``--k <JSON>``, marked partial: vLLM passes the mapping's
  Python ``str()``, which is not JSON, so what it accepts is not proved.

The file must be written by a here-document of the same script on the
evaluated path, before the serve command (``cat > FILE <<EOF``), whose target
is spelt like the ``--config`` argument. Its content is what bash would write
(``HeredocCapture.content``): variables the evaluator can prove are expanded,
anything else is a hole rendered ``<unevaluated:…>`` whose marker makes the
result partial. A ``--config`` file that is not written so, or whose content
is no YAML mapping, is dropped from argv with a ``config-file`` marker: the
other flags are exact, the file's are unknown.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

from provenance.errors import InputError
from provenance.evidence.bash.launcher import Heredoc, LauncherResult
from provenance.model.record import PartialMarker
from provenance.safe_yaml import load_yaml_bytes

CONFIG_FLAG = "--config"


def _config_argument(argv: list[str]) -> tuple[int, int, str] | None:
    """(start, end, FILE) of the first ``--config FILE`` / ``--config=FILE`` in argv."""
    for i, word in enumerate(argv):
        if word == CONFIG_FLAG and i + 1 < len(argv):
            return i, i + 2, argv[i + 1]
        if word.startswith(CONFIG_FLAG + "="):
            return i, i + 1, word[len(CONFIG_FLAG) + 1 :]
    return None


def config_flags(
    data: Mapping[str, object] | Mapping[object, object], origin: str
) -> tuple[list[str], list[str]]:
    """The argv words vLLM makes of a config mapping, plus notes on what is not proved."""
    words: list[str] = []
    notes: list[str] = []
    for key, value in data.items():
        flag = f"--{key}"
        if isinstance(value, bool):
            if value:
                words.append(flag)
        elif isinstance(value, list):
            if value:
                words.append(flag)
                words.extend(str(item) for item in value)
        elif isinstance(value, Mapping):
            words.extend([flag, json.dumps(value, sort_keys=False, default=str)])
            notes.append(f"{origin}: {key} is a mapping; vLLM passes its str(), not JSON")
        else:
            words.extend([flag, str(value)])
    return words, notes


def _writer(result: LauncherResult, target: str) -> list[Heredoc]:
    """Here-documents that write ``target`` before the serve command, in line order."""
    wanted = posixpath.normpath(target)
    limit = result.serve_line if result.serve_line is not None else 1 << 30
    return [
        h
        for h in result.heredocs
        if h.line < limit and any(posixpath.normpath(t) == wanted for t in h.targets)
    ]


def merge_config_file(result: LauncherResult, path: str) -> tuple[list[str], list[PartialMarker]]:
    """``result.argv`` with its ``--config FILE`` replaced by the file's flags, as vLLM does.

    Returns the argv and the markers of what could not be proved. ``result``
    must have served (``argv`` not None).
    """
    if result.argv is None:
        raise ValueError("merge_config_file needs a served argv")
    argv = list(result.argv)
    found = _config_argument(argv)
    if found is None:
        return argv, []
    start, end, target = found
    rest = argv[:start] + argv[end:]
    markers: list[PartialMarker] = []
    if _config_argument(rest) is not None:
        markers.append(
            PartialMarker(
                construct_name="config-file",
                path=path,
                line=result.serve_line,
                detail="--config given more than once; vLLM reads only the first",
            )
        )
    writers = _writer(result, target)
    if not writers:
        markers.append(
            PartialMarker(
                construct_name="config-file",
                path=path,
                line=result.serve_line,
                detail=f"--config {target}: no here-document of the script writes it before "
                "vllm serve; its flags are unknown",
            )
        )
        return rest, markers
    writer = writers[-1]
    if len({h.content for h in writers}) > 1:
        lines = ", ".join(str(h.line) for h in writers)
        markers.append(
            PartialMarker(
                construct_name="config-file",
                path=path,
                line=writer.line,
                detail=f"--config {target}: written by several here-documents (line {lines}); "
                "the last is used",
            )
        )
    origin = f"{path}:{writer.line} (here-document {target})"
    try:
        data = load_yaml_bytes(writer.content.encode("utf-8"), origin).data
    except InputError as exc:
        data = exc
    if not isinstance(data, Mapping):
        why = str(data) if isinstance(data, InputError) else "it is not a YAML mapping"
        markers.append(
            PartialMarker(
                construct_name="config-file",
                path=path,
                line=writer.line,
                detail=f"--config {target}: {why}; its flags are unknown",
            )
        )
        return rest, markers
    markers.extend(writer.content_partial)
    words, notes = config_flags(data, origin)
    markers.extend(
        PartialMarker(construct_name="config-file", path=path, line=writer.line, detail=note)
        for note in notes
    )
    # After "vllm serve" and the positional model (when argv has one).
    at = 3 if len(rest) > 2 and not rest[2].startswith("-") else 2
    return rest[:at] + words + rest[at:], markers
