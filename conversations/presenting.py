"""A tool's result as a person reads it: offline mode's answer (``llm/offline.py``).

A tool's ``content`` is written for a model (``registry/contract_render.py``): a
status line, the schema, rows separated by `` | ``, JSON input schemas, ranked
alternatives with scores. When the person ran the tool themselves (``/tool {...}``
with no model configured) the answer is that content put as they want it, in
Markdown: a table as a table, a hint as a hint, an error as an error, a tool's
input as its fields. Only the layout changes, never a value; anything not in the
contract's shapes is shown as written.
"""

from __future__ import annotations

import re

from eunice.jsonlimits import loads_bounded
from registry.contract_render import OK_STATUS, compact_input_schema

ELIDED = re.compile(r"\A\.\.\. \((?P<count>[\d,]+) more rows?\) \.\.\.\Z")
HINT = re.compile(r"\A⚠ (?P<kind>schema hint|fetch hint|ambiguous): (?P<message>.*)\Z", re.DOTALL)
ERROR = re.compile(r"\A✗ error \((?P<kind>[^)]*)\): (?P<message>.*)\Z", re.DOTALL)
ALTERNATIVE = re.compile(r"\A {2}\d+\. (?P<label>.+) \(score [\d.]+\)\Z")
EXPECTED = re.compile(r"; expected (?P<schema>\{.*\})\Z")
UNKNOWN = re.compile(r"\Aunknown tool '(?P<name>[^']*)'")
LIST_HEADINGS = ("did you mean:", "options:", "pick one:")
MAX_CHARS = 60_000  # the answer's bound; the tool's whole result stays in the events


def for_person(name: str, content: str) -> str:
    """Markdown for a person of ``content``, the result of their own call of tool ``name``."""
    content = content[:MAX_CHARS]
    if content.startswith("✗ error"):
        return _error(content)
    if HINT.match(content.split("\n", 1)[0]):
        return _hint(name, content)
    if content.startswith(OK_STATUS):
        return _ok(content)
    return content


def _error(content: str) -> str:
    match = ERROR.match(content)
    if match is None:
        return f"**Error:** {content}"
    return f"**Error** ({match['kind']}): {match['message']}"


def _hint(name: str, content: str) -> str:
    lines = content.split("\n")
    kind, message = HINT.match(lines[0]).group("kind", "message")  # type: ignore[union-attr]
    extra, alternatives, index = [], [], 1
    while index < len(lines) and lines[index] not in LIST_HEADINGS:
        extra.append(lines[index])
        index += 1
    index += 1
    while index < len(lines):
        match = ALTERNATIVE.match(lines[index])
        signature = ""
        if index + 1 < len(lines) and lines[index + 1].startswith("     input: "):
            signature = lines[index + 1].removeprefix("     input: ")
            index += 1
        if match:
            alternatives.append((match["label"], signature))
        index += 1
    expected = EXPECTED.search(message)
    if expected:  # the rule broken, in the field's own JSON schema: the fields below say it better
        message = message[: expected.start()]
    unknown = UNKNOWN.match(message)
    blocks = [f"**No tool is called `{unknown['name']}`.**" if unknown else f"**Hint:** {message}"]
    if extra:
        blocks.append("\n".join(f"- {line}" for line in extra))
    own = [signature for label, signature in alternatives if label == name]
    others = [(label, signature) for label, signature in alternatives if label != name]
    if own and own[0]:  # the tool just called is no suggestion: what it takes is
        blocks.append(f"`/{name}` takes `{own[0]}` (`?` marks what may be left out).")
    if others:
        heading = "Did you mean:" if kind == "schema hint" else "Options:"
        items = [f"- `/{label}`" + (f" — takes `{signature}`" if signature else "") for label, signature in others]
        blocks.append("\n".join([heading, *items]))
    elif unknown:
        blocks.append('Find one with `/search_tools {"query": "what you want to do"}`.')
    return "\n\n".join(blocks)


def _ok(content: str) -> str:
    lines = content.split("\n")[1:]  # the status line: the table or text says it
    notes, index = [], 0
    while index < len(lines) and (lines[index].startswith("schema:") or lines[index].startswith("schema (")):
        index += 1
    while index < len(lines) and lines[index].startswith("⚠ "):
        kind, _, message = lines[index][2:].partition(": ")
        notes.append(f"> **Note** ({kind}): {message}")
        index += 1
    body = "\n".join(lines[index:])
    shown = _table(body) or _tools(body) or _json(body) or body
    return "\n\n".join([*notes, shown]).strip() or "Done."


def _table(body: str) -> str | None:
    """A ``a | b`` preview (``_table`` of the renderer) as a Markdown table."""
    lines = body.split("\n")
    caption = ""
    if lines and lines[0].startswith("preview: "):
        caption, lines = lines[0].removeprefix("preview: "), lines[1:]
    if len(lines) < 2 or " | " not in lines[0]:
        return None
    width = lines[0].count(" | ") + 1
    rows = []
    for line in lines:
        elided = ELIDED.match(line)
        if elided:
            rows.append([f"… {elided['count']} more rows …"] + [""] * (width - 1))
        elif line.count(" | ") + 1 == width:
            rows.append([cell.replace("|", "\\|") for cell in line.split(" | ")])
        else:
            return None  # a cell held " | ": not a table we can read back
    table = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    table.extend("| " + " | ".join(row) + " |" for row in rows[1:])
    return "\n".join(table) + (f"\n\n*{caption[0].upper()}{caption[1:]}.*" if caption else "")


def _tools(body: str) -> str | None:
    """search_tools' list, each tool's JSON input schema shown as its fields."""
    if "\n  input_schema: " not in body:
        return None
    out: list[str] = []
    for line in body.split("\n"):
        if line.startswith("  input_schema: ") and out and out[-1].startswith("- "):
            try:
                schema = loads_bounded(line.removeprefix("  input_schema: "), what="an input schema")
                fields = compact_input_schema(schema)
            except (ValueError, AttributeError):  # not JSON, too deep or too long: shown as it is
                continue
            tool, _, description = out[-1].partition(" — ")
            out[-1] = f"{tool} `{fields}` — {description}"
        elif line.startswith("- ") and ": " in line:
            tool, _, description = line[2:].partition(": ")
            out.append(f"- **/{tool}** — {description}")
        else:
            out.append(line)
    return "\n".join(out)


def _json(body: str) -> str | None:
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:  # a tool's output: from outside (an MCP server), so bounded
        loads_bounded(stripped, what="the tool's output")
    except ValueError:
        return None
    return f"```json\n{stripped}\n```"
