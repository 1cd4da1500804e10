"""Handler of search_self_code: questions about Eunice's own installed source, answered
from its tracked source files only (tools.lib.source_index), read-only and bounded."""

from __future__ import annotations

import difflib
from pathlib import Path

from django.conf import settings

from registry.context import ToolContext
from registry.contract import HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.datacommon import ranked
from tools.lib.source_index import SourceFile, search, source_files

READ_LINES = 150


@uniform_contract(name="search_self_code", is_tabular=False)
def search_self_code(inputs: dict, context: ToolContext) -> Ok:
    """Search the source (``query``) or read a stretch of one file (``read``)."""
    files = _source_files()
    if "read" in inputs:
        return _read(files, inputs["read"], inputs.get("start_line", 1))
    if "query" not in inputs:
        raise HintException("schema", "query: say what to look for (or pass read: a path, to read it)")
    under = inputs.get("under", "").strip("/")
    if under:
        files = tuple(f for f in files if f.path == under or f.path.startswith(under + "/"))
        if not files:
            raise HintException("schema", f"under: no source under {under!r}", _nearest(under, source_files_dirs()))
    matches = search(files, inputs["query"], limit=inputs.get("max_results", 8))
    if not matches:
        return Ok(rows=0, data="No source file matches.", warnings=[Warning("no_match", "try other words")])
    text = "\n\n".join(
        f"{m.path} (score {m.score})\n" + "\n".join(f"  {n}: {line}" for n, line in m.lines) for m in matches
    )
    return Ok(rows=len(matches), data=text)


def _read(files: tuple[SourceFile, ...], path: str, start: int) -> Ok:
    found = next((f for f in files if f.path == path.strip("/")), None)
    if found is None:
        raise HintException(
            "schema",
            f"read: {path!r} is not one of Eunice's source files (tracked code and docs only)",
            _nearest(path, [f.path for f in files]),
        )
    lines = found.text.splitlines()
    if start > len(lines):
        raise HintException("schema", f"start_line: {found.path} has {len(lines)} lines")
    shown = lines[start - 1 : start - 1 + READ_LINES]
    end = start + len(shown) - 1
    more = f"\n… {len(lines) - end} more lines (start_line={end + 1})" if end < len(lines) else ""
    body = "\n".join(f"{n}: {line}" for n, line in enumerate(shown, start))
    return Ok(rows=len(shown), data=f"{found.path}, lines {start}-{end} of {len(lines)}\n{body}{more}")


def _source_files() -> tuple[SourceFile, ...]:
    """Eunice's source files, never under a directory this deployment keeps data in."""
    sandbox = getattr(settings, "SANDBOX", {}) or {}
    data = [settings.VAR_DIR, settings.EUNICE_FILES_DIR, settings.STATIC_ROOT, sandbox.get("SCRATCH_DIR")]
    return source_files(Path(settings.BASE_DIR), tuple(Path(d) for d in data if d))


def source_files_dirs() -> list[str]:
    """The directories that hold source files, for a hint."""
    return sorted({f.path.rsplit("/", 1)[0] for f in _source_files() if "/" in f.path})


def _nearest(wanted: str, choices: list[str]) -> list[dict]:
    return ranked(difflib.get_close_matches(wanted, choices, n=5, cutoff=0.3))


TOOLS = (
    Tool(
        name="search_self_code",
        description=(
            "Answer questions about how Eunice itself works (which tool does what, how a call is "
            "dispatched, what a setting does) from its own implementation: finds where Eunice's "
            "Python modules, templates and docs mention an identifier or topic; then `read` one of "
            "those places to see its lines. Read-only; never data, uploads or secrets."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 3, "description": "An identifier or words to find."},
                "under": {"type": "string", "description": "Only below this directory, e.g. 'registry'."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8},
                "read": {"type": "string", "description": "One of the places found, e.g. 'tools/catalog.py'."},
                "start_line": {"type": "integer", "minimum": 1, "default": 1},
            },
            "additionalProperties": False,
        },
        handler=search_self_code,
        category="utility",
        status_message="Reading Eunice's source",
        timeout_seconds=30,
    ),
)
